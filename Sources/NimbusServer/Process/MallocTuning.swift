#if canImport(Glibc)
import Glibc
#endif

/// glibc's allocator settings for a long-running server process (`nimbus serve`, and
/// `nimbus-bench`'s embedded server).
///
/// By default glibc serves allocations above 128 KiB (a threshold it raises as large blocks
/// are freed) with fresh `mmap`s and gives freed memory at the top of the heap back to the
/// system at once, so requests that build large answers — a change-feed page of 200 records
/// is ≈ 155 KB — keep paying for zero-filled pages and their page faults. Measured on the
/// PostgreSQL change feed: ≈ 15 % of the server's CPU per record (docs/PERFORMANCE.md).
/// The same holds for asset chunks on PostgreSQL: postgres-nio copies each 1 MiB chunk into
/// 2 MiB buffers (the bind, the send buffer) and gathers each chunk it reads into another;
/// as fresh `mmap`s their page faults and unmaps took ≈ 20 % of the CPU of a PostgreSQL
/// upload or download (docs/PERFORMANCE.md, "Assets"). Allocations under 4 MiB now come from
/// the heap, and up to 8 MiB of free memory is kept for reuse.
package enum MallocTuning {
    /// Applies the settings to this process (a no-op where the allocator is not glibc's).
    package static func apply() {
        #if canImport(Glibc)
        // `mallopt` is declared in <malloc.h>, which the Glibc module does not import.
        typealias MallOpt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(nil, "mallopt") else { return }  // not glibc's allocator
        let mallopt = unsafeBitCast(symbol, to: MallOpt.self)
        let trimThreshold: Int32 = -1, topPad: Int32 = -2, mmapThreshold: Int32 = -3  // M_* in <malloc.h>
        _ = mallopt(mmapThreshold, 4 << 20)
        _ = mallopt(trimThreshold, 8 << 20)
        _ = mallopt(topPad, 1 << 20)
        #endif
    }
}

import Foundation
import NimbusDocuments
import Testing

@Suite struct ConflictNameTests {
    @Test func namesTheDeviceAndTheTimeBeforeTheExtension() {
        let date = Date(timeIntervalSince1970: 1_795_821_304)  // 2026-11-27 23:15:04 UTC
        #expect(ConflictName.name(for: "Plan.txt", device: "Alice's iPad", date: date)
            == "Plan (Conflict from Alice's iPad, 2026-11-27 23.15.04).txt")
        #expect(ConflictName.name(for: "Makefile", device: "mac", date: date)
            == "Makefile (Conflict from mac, 2026-11-27 23.15.04)")
        // Valid everywhere: no colons.
        #expect(PortableName.isPortable(ConflictName.name(for: "a.b", device: "d", date: date)))
    }
}

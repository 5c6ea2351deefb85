/// The additional authenticated data of a sealed value: a label and length-prefixed parts,
/// so that no two different bindings have the same bytes. A value sealed for one record
/// field, zone or user does not open for another.
struct Binding {
    private(set) var bytes: [UInt8]

    /// The binding of `parts` under `label`, with `room` bytes to spare for parts appended later.
    init(_ label: String, _ parts: [String], room: Int = 32) {
        bytes = []
        bytes.reserveCapacity(parts.reduce(label.utf8.count + 4 * (parts.count + 2) + room) { $0 + $1.utf8.count })
        append(label.utf8)
        for part in parts { append(part.utf8) }
    }

    mutating func append(_ part: some Collection<UInt8>) {
        let count = UInt32(part.count)
        bytes.append(UInt8(count >> 24))
        bytes.append(UInt8(count >> 16 & 0xFF))
        bytes.append(UInt8(count >> 8 & 0xFF))
        bytes.append(UInt8(count & 0xFF))
        bytes.append(contentsOf: part)
    }

    func appending(_ part: [UInt8]) -> Binding {
        var copy = self
        copy.append(part)
        return copy
    }
}

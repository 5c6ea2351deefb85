/// The additional authenticated data of a sealed value: a label and length-prefixed parts,
/// so that no two different bindings have the same bytes. A value sealed for one record
/// field, zone or user does not open for another.
struct Binding {
    private(set) var bytes: [UInt8]

    init(_ label: String, _ parts: [String]) {
        bytes = []
        for part in [label] + parts { append(Array(part.utf8)) }
    }

    mutating func append(_ part: [UInt8]) {
        let count = UInt32(part.count)
        bytes += [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
        bytes += part
    }

    func appending(_ part: [UInt8]) -> Binding {
        var copy = self
        copy.append(part)
        return copy
    }
}

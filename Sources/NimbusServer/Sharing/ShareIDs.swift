/// Short GUIDs and participant IDs: 22 URL-safe characters (131 random bits) from the
/// system's secure generator, so that a share's URL cannot be guessed.
enum ShareIDs {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    @Sendable static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<22).map { _ in alphabet[Int(generator.next() % 64)] })
    }
}

import Foundation
import NimbusProtocol
import Testing

@testable import NimbusStore

/// The decoders of everything a client hands back opaque — sync tokens of every feed, query
/// continuation markers — over thousands of random and mutated inputs from a seeded
/// generator: each input either decodes to exactly what was issued or is refused with a
/// clean CloudKit error. None may trap (a trap would end the server process).
@Suite("Token and marker decoders")
struct TokenDecoderPropertyTests {
    static let database = DatabaseKey(container: "iCloud.c", environment: .development, scope: .private, owner: "_alice")
    static let recipient = NotificationRecipient(container: "iCloud.c", environment: .development, userRecordName: "_alice")

    /// Issues a token of every kind at random positions, and reads a string back with the
    /// matching decoder.
    enum Feed: CaseIterable {
        case records, database, meta, notifications

        func issue(_ tokens: ChangeTokens, _ numbers: [Int64]) -> String {
            switch self {
            case .records:
                return tokens.records(zone: "Z", incarnation: numbers[0], version: numbers[1], floor: numbers[2], in: TokenDecoderPropertyTests.database)
            case .database: return tokens.database(version: numbers[0], in: TokenDecoderPropertyTests.database)
            case .meta: return tokens.meta(version: numbers[0], in: TokenDecoderPropertyTests.database)
            case .notifications: return tokens.notifications(sequence: numbers[0], for: TokenDecoderPropertyTests.recipient)
            }
        }

        func decode(_ tokens: ChangeTokens, _ text: String) throws(CloudKitError) -> [Int64] {
            switch self {
            case .records:
                let position = try tokens.decodeRecords(text, zone: "Z", in: TokenDecoderPropertyTests.database)
                return [position.incarnation, position.version, position.floor]
            case .database: return [try tokens.decodeDatabase(text, in: TokenDecoderPropertyTests.database)]
            case .meta: return [try tokens.decodeMeta(text, in: TokenDecoderPropertyTests.database)]
            case .notifications: return [try tokens.decodeNotifications(text, for: TokenDecoderPropertyTests.recipient)]
            }
        }

        var count: Int { self == .records ? 3 : 1 }
    }

    static func tokens(seed: UInt64) -> ChangeTokens {
        var generator = SeededGenerator(seed: seed)
        return ChangeTokens(secret: ChangeTokens.newSecret(using: &generator))
    }

    static func randomNumber(_ generator: inout SeededGenerator) -> Int64 {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: return 0
        case 1: return Int64.random(in: 0...1_000, using: &generator)
        case 2: return Int64.max - Int64.random(in: 0...3, using: &generator)
        default: return Int64.random(in: 0...Int64.max, using: &generator)
        }
    }

    /// The only errors a decoder may throw for bad input.
    static func isCleanRefusal(_ error: CloudKitError) -> Bool {
        (error.code == .badRequest || error.code == .changeTokenExpired) && !error.reason.isEmpty
    }

    @Test func everyIssuedTokenReadsBackExactly() throws {
        let tokens = Self.tokens(seed: 1)
        var generator = SeededGenerator(seed: 2)
        for _ in 0..<2_000 {
            let feed = Feed.allCases.randomElement(using: &generator)!
            let numbers = (0..<feed.count).map { _ in Self.randomNumber(&generator) }
            let token = feed.issue(tokens, numbers)
            #expect(try feed.decode(tokens, token) == numbers)
            #expect(token.utf8.count < ChangeTokens.maximumTokenLength)
        }
    }

    @Test func mutatedTokensAreRefusedCleanlyOrReadBackUnchanged() {
        let tokens = Self.tokens(seed: 3)
        var generator = SeededGenerator(seed: 4)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/:. é\u{0}")
        var refused = 0
        for _ in 0..<4_000 {
            let feed = Feed.allCases.randomElement(using: &generator)!
            let numbers = (0..<feed.count).map { _ in Self.randomNumber(&generator) }
            var characters = Array(feed.issue(tokens, numbers))
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<max(1, characters.count), using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0 where !characters.isEmpty: characters[position] = alphabet.randomElement(using: &generator)!
                case 1: characters.insert(alphabet.randomElement(using: &generator)!, at: min(position, characters.count))
                case 2 where !characters.isEmpty: characters.remove(at: position)
                default: characters = Array(characters.prefix(position))
                }
            }
            do {
                // A mutation that decodes names the issued position: base64url's last
                // character has bits no byte uses, so some edits leave the bytes unchanged.
                let decoded = try feed.decode(tokens, String(characters))
                #expect(decoded == numbers)
            } catch {
                #expect(Self.isCleanRefusal(error), "\(error)")
                refused += 1
            }
        }
        #expect(refused > 3_500)
    }

    @Test func arbitraryTextIsRefusedCleanly() {
        let tokens = Self.tokens(seed: 5)
        var generator = SeededGenerator(seed: 6)
        for index in 0..<3_000 {
            let text: String
            switch index % 3 {
            case 0:
                // Random bytes as base64url: decodes, then fails the format or the signature.
                let bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                text = Base64URL.encode(bytes)
            case 1:
                // Plausible token text with random fields, unsigned or with a random signature.
                let kind = ["r2", "d2", "m2", "n2", "r1", "d1", "m1", "n1", "x2", ""].randomElement(using: &generator)!
                let fields = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                    ["", "0", "-1", "18446744073709551616", "9223372036854775807", "abc", "00000001", "+5"]
                        .randomElement(using: &generator)!
                }
                let mac = (0..<Int.random(in: 0...20, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                text = Base64URL.encode(Array(([kind] + fields).joined(separator: ":").utf8) + mac)
            default:
                // Any Unicode scalars, of any length up to past the limit.
                let scalars = (0..<Int.random(in: 0...600, using: &generator)).compactMap { _ in
                    Unicode.Scalar(UInt32.random(in: 0...0x1_0FFF, using: &generator))
                }
                text = String(String.UnicodeScalarView(scalars))
            }
            for feed in Feed.allCases {
                do {
                    let numbers = try feed.decode(tokens, text)
                    Issue.record("\(feed) accepted '\(text)' as \(numbers)")
                } catch {
                    #expect(Self.isCleanRefusal(error), "\(error)")
                }
            }
        }
    }

    @Test func earlierReleasesTokensAreExpiredNotRefused() {
        let tokens = Self.tokens(seed: 7)
        for (feed, text) in [(Feed.records, "r1:0:12"), (.database, "d1:3"), (.meta, "m1:3"), (.notifications, "n1:9")] {
            do {
                let numbers = try feed.decode(tokens, Base64URL.encode(Array(text.utf8)))
                Issue.record("\(feed) accepted the earlier format's '\(text)' as \(numbers)")
            } catch {
                #expect(error.code == .changeTokenExpired)
            }
        }
    }

    @Test func aTokenIsBoundToItsSecretFeedDatabaseZoneAndUser() throws {
        let tokens = Self.tokens(seed: 8)
        let other = Self.tokens(seed: 9)
        let bob = DatabaseKey(container: "iCloud.c", environment: .development, scope: .private, owner: "_bob")
        let shared = DatabaseKey(container: "iCloud.c", environment: .development, scope: .shared, owner: "_alice")
        let production = DatabaseKey(container: "iCloud.c", environment: .production, scope: .private, owner: "_alice")
        let record = tokens.records(zone: "Z", incarnation: 1, version: 5, floor: 0, in: Self.database)
        // Signed with a secret this server does not have (it was replaced): a refetch.
        do {
            let position = try other.decodeRecords(record, zone: "Z", in: Self.database)
            Issue.record("a token of another secret was read as \(position)")
        } catch {
            #expect(error.code == .changeTokenExpired)
        }
        let refusals: [() throws -> Void] = [
            { _ = try tokens.decodeRecords(record, zone: "Y", in: Self.database) },
            { _ = try tokens.decodeRecords(record, zone: "Z", in: bob) },
            { _ = try tokens.decodeRecords(record, zone: "Z", in: shared) },
            { _ = try tokens.decodeRecords(record, zone: "Z", in: production) },
            { _ = try tokens.decodeDatabase(record, in: Self.database) },
            { _ = try tokens.decodeDatabase(tokens.database(version: 5, in: Self.database), in: bob) },
            { _ = try tokens.decodeDatabase(tokens.meta(version: 5, in: Self.database), in: Self.database) },
            {
                _ = try tokens.decodeNotifications(
                    tokens.notifications(sequence: 5, for: Self.recipient),
                    for: NotificationRecipient(container: "iCloud.c", environment: .development, userRecordName: "_bob"))
            },
        ]
        for (index, refusal) in refusals.enumerated() {
            do {
                try refusal()
                Issue.record("case \(index) was accepted")
            } catch {
                #expect((error as? CloudKitError)?.code == .badRequest, "case \(index)")
            }
        }
        // zones/changes takes a changes/database token too: both count database versions.
        #expect(try tokens.decodeMeta(tokens.database(version: 5, in: Self.database), in: Self.database) == 5)
    }

    /// A forged marker cannot carry a position no stored value has (NaN or an infinity sort
    /// key, which compares false against everything).
    @Test(arguments: ["nan", "NaN", "inf", "-infinity", "1e400"])
    func markersWithNonFiniteSortKeysAreRefused(number: String) throws {
        let json: JSON = ["v": 1, "q": .string(String(7, radix: 16)), "k": [["r": .string(number)]], "n": "r1", "z": "Z"]
        let marker = Base64URL.encode(json.serializedBytes())
        #expect(throws: CloudKitError.self) {
            _ = try ContinuationMarker.decode(marker, fingerprint: 7, keyCount: 1)
        }
    }

    @Test func continuationMarkersAreRefusedCleanlyOrReadBackUnchanged() throws {
        var generator = SeededGenerator(seed: 10)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=:{}\"")
        for _ in 0..<3_000 {
            let keys: [IndexValue] = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: return .integer(Int64.random(in: Int64.min...Int64.max, using: &generator))
                case 1: return .real(Double.random(in: -1e300...1e300, using: &generator))
                case 2: return .text(String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }))
                default: return .missing
                }
            }
            let position = ResultPosition(keys: keys, recordName: "r\(generator.next())", zone: "Z")
            let fingerprint = generator.next()
            let marker = ContinuationMarker(fingerprint: fingerprint, position: position).encoded
            #expect(try ContinuationMarker.decode(marker, fingerprint: fingerprint, keyCount: keys.count) == position)
            var characters = Array(marker)
            let index = Int.random(in: 0..<characters.count, using: &generator)
            if Bool.random(using: &generator) {
                characters[index] = alphabet.randomElement(using: &generator)!
            } else {
                characters = Array(characters.prefix(index))
            }
            do {
                _ = try ContinuationMarker.decode(String(characters), fingerprint: fingerprint, keyCount: keys.count)
            } catch {
                #expect(error.code == .badRequest, "\(error)")
            }
        }
    }
}

/// SplitMix64: a seeded generator, so every run tries the same inputs.
typealias SeededGenerator = SplitMix64

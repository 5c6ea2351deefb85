import ArgumentParser
import Foundation
import Nimbus
import SharedAlbum

extension SharedAlbumCommand {
    /// `shared-album keys …`: the user's end-to-end encryption keys on this device.
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set up this device's encryption keys, or enrol it through another device of yours.",
            subcommands: [SetUp.self, Offer.self, Enrol.self, Recover.self])
    }
}

extension SharedAlbumCommand.Keys {
    struct SetUp: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "setup", abstract: "Make your keys (your first device) or check this device has them.")
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app(sync: false)
            do {
                if let recovery = try await app.setUpKeys() {
                    print("your recovery key (write it down; it is shown once):\n\(recovery.text)")
                } else {
                    print("this device holds your keys")
                }
            } catch let error as NimbusError where error.code == .encryptionKeysMissing {
                print("your keys are on another device: run `shared-album keys offer` there, then `shared-album keys enrol CODE` here")
            }
        }
    }

    struct Offer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a code that enrols another device of yours, and wait for it (10 minutes).")
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app(sync: false)
            let invitation = try await app.offerEnrolment()
            print("on the new device: shared-album keys enrol \(invitation.code)")
            try await everySecond(until: invitation.expiresAt, orElse: "the code expired: offer a new one") {
                try await app.answerEnrolment(invitation)
            }
            print("enrolled")
        }
    }

    struct Enrol: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enrol this device with the code another device shows.")
        @Argument(help: "The code.") var code: String
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            let app = try await device.app(sync: false)
            let ticket = try await app.requestEnrolment(code: code)
            let deadline = Date().addingTimeInterval(600)
            try await everySecond(until: deadline, orElse: "no answer: is `keys offer` still running on the other device?") {
                try await app.completeEnrolment(ticket)
            }
            print("this device holds your keys")
        }
    }

    struct Recover: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Restore your keys on this device with your recovery key.")
        @Argument(help: "The recovery key.") var recoveryKey: String
        @OptionGroup var device: DeviceOptions
        func run() async throws {
            try await device.app(sync: false).restoreKeys(recoveryKey: recoveryKey)
            print("this device holds your keys")
        }
    }
}

/// Tries `step` every second until it returns `true`; after `deadline`, fails with `message`.
private func everySecond(until deadline: Date, orElse message: String, _ step: () async throws -> Bool) async throws {
    while Date() < deadline {
        if try await step() { return }
        try await Task.sleep(for: .seconds(1))
    }
    throw ValidationError(message)
}

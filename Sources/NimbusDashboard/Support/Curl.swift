import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// A request to the CloudKit API as a curl command an operator can copy.
enum Curl {
    /// `curl` posting `body` to `operation` of the container's database, with a placeholder
    /// for the API token (tokens are not put into pages they were not asked for on).
    static func command(
        origin: String, container: String, environment: ContainerEnvironment, scope: DatabaseScope = .public,
        operation: String, body: JSON
    ) -> String {
        let url = "\(origin)/database/1/\(container)/\(environment.rawValue)/\(scope.rawValue)/\(operation)?ckAPIToken="
        // Double quotes around the URL so that the shell fills in the token.
        let quotedURL = "\"" + doubleQuoted(url) + "$NIMBUS_API_TOKEN\""
        return "curl -sS -X POST \(quotedURL) \\\n  -H 'Content-Type: application/json' \\\n  --data-binary \(quoted(body.serialized()))"
    }

    /// Escaped for the inside of double quotes in a POSIX shell.
    static func doubleQuoted(_ text: String) -> String {
        var out = ""
        for character in text {
            if "\"$`\\".contains(character) { out.append("\\") }
            out.append(character)
        }
        return out
    }

    /// Single-quoted for a POSIX shell.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

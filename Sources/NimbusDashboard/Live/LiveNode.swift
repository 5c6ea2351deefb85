import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The node a page was served by: with several `nimbus serve` nodes on one PostgreSQL
/// database, each shows its own live numbers.
enum LiveNode {
    /// `host (pid 123)`.
    static func name(port: Int?) -> String {
        let host = ProcessInfo.processInfo.hostName
        return "\(host)\(port.map { ":\($0)" } ?? "") (pid \(ProcessInfo.processInfo.processIdentifier))"
    }
}

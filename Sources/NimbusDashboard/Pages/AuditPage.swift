import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The operators' audit log.
enum AuditPage {
    /// `GET /dashboard/audit`: the newest 200 entries.
    static func show(_ context: PageContext) async throws -> Response {
        let entries = try await context.app.store.auditLog(limit: 200)
        return context.render(
            "audit",
            [
                "title": "Audit log",
                "entries": entries.map {
                    [
                        "at": Format.date($0.at), "operator": $0.operatorName, "action": $0.action,
                        "container": $0.container, "detail": $0.detail,
                    ]
                },
            ])
    }
}

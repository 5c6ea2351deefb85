import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// A container's schema in each environment (record types, fields, indexes, grants), the
/// development schema's edit box, the difference development → production and the deploy,
/// with the rules of `nimbus schema deploy` (``SchemaDeployment``).
enum SchemaPages {
    /// `GET /dashboard/schema?c=…`.
    static func show(_ context: PageContext, message: String? = nil, error: String? = nil, draft: String? = nil)
        async throws -> Response
    {
        let container = try await context.container()
        let store = context.app.store
        let development = try await store.schema(container: container, environment: .development)
        let production = try await store.schema(container: container, environment: .production)
        var values: [String: Any] = [
            "title": "Schema · \(container)", "container": container, "cq": DashboardApp.query([("c", container)]),
            "message": message as Any, "error": error as Any,
            "environments": [
                environmentValues("development", development), environmentValues("production", production),
            ],
            "developmentText": draft ?? SchemaFile.cloudKitText(of: development.schema),
            "developmentVersion": development.version,
        ]
        do {
            let report = try SchemaDeployment.check(development.schema, replacing: production.schema)
            values["changes"] =
                report.addedRecordTypes.map { ["sign": "+", "what": "record type \($0)", "add": true] as [String: Any] }
                + report.addedFields.map { ["sign": "+", "what": "field \($0)", "add": true] as [String: Any] }
                + report.addedIndexes.map { ["sign": "+", "what": "index \($0)", "add": true] as [String: Any] }
                + report.removedIndexes.map { ["sign": "−", "what": "index \($0)", "add": false] as [String: Any] }
            let grantsDiffer = development.schema.recordTypes.contains { name, type in
                production.schema.recordTypes[name].map { $0.grants != type.grants } ?? false
            }
            values["grantsDiffer"] = grantsDiffer
            values["deployable"] = !(report.unchanged
                && development.schema.keepingRoleMembers(of: production.schema) == production.schema)
        } catch {
            // `check` throws only CloudKitError (typed).
            values["refusal"] = error.reason
        }
        return context.render("schema", values)
    }

    static func environmentValues(_ name: String, _ versioned: VersionedSchema) -> [String: Any] {
        [
            "name": name, "version": versioned.version, "empty": versioned.schema.recordTypes.isEmpty,
            "types": versioned.schema.recordTypes.sorted { $0.key < $1.key }.map { typeName, type in
                [
                    "name": typeName,
                    "fields": type.fields.sorted { $0.key < $1.key }.map { fieldName, field in
                        [
                            "name": fieldName, "type": field.type.rawValue,
                            "indexes": field.indexes.sorted().map(\.rawValue).joined(separator: ", "),
                        ]
                    },
                    "grants": type.grants.map { "\($0.permission.rawValue) to \($0.role)" }.joined(separator: ", "),
                ] as [String: Any]
            },
        ]
    }

    /// `POST /dashboard/schema/deploy`: promotes development to production.
    static func deploy(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        do {
            let report = try await SchemaDeployment.deploy(nil, container: container, to: context.app.store)
            try await context.app.store.appendAudit(
                OperatorAuditEntry(
                    at: context.app.now(), operatorName: context.session.operatorName, action: "deploy schema",
                    container: container, detail: "production version \(report.version)"))
            return try await show(
                context, message: report.unchanged ? "Production already had this schema." : "Deployed: production schema version \(report.version).")
        } catch let error as CloudKitError {
            return try await show(context, error: "Not deployed: \(error.reason)")
        }
    }

    /// `POST /dashboard/schema/development`: replaces the development schema with the edited
    /// text, additively (as a deploy would be checked) and only if nobody changed it since.
    static func saveDevelopment(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let text = context.form["schema"] ?? ""
        let expected = context.form["version"].flatMap { Int64($0) } ?? -1
        do {
            let current = try await context.app.store.schema(container: container, environment: .development)
            let schema = try SchemaFile.parse(text).keepingRoleMembers(of: current.schema)
            guard current.version == expected else {
                throw CloudKitError(
                    .conflict, "the development schema changed since this page was loaded (version \(expected), now \(current.version)); review it and edit again")
            }
            _ = try SchemaDeployment.check(schema, replacing: current.schema)
            let version = try await context.app.store.updateSchema(
                schema, container: container, environment: .development, expectedVersion: expected)
            return try await show(context, message: "Development schema saved (version \(version)).")
        } catch let error as CloudKitError {
            return try await show(context, error: "Not saved: \(error.reason)", draft: text)
        }
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// One record: all its fields, and creating, editing and deleting it through `records/modify`
/// with its change tag, so that a stale edit is refused as a conflict, never an overwrite.
enum RecordPages {
    struct Location {
        var container: String
        var environment: ContainerEnvironment
        var zone: String
        /// `[("u", user record name)]` in a user's private database.
        var user: [(String, String)] = []

        var zoneID: JSON { ["zoneName": .string(zone)] }
        var recordsQ: String {
            DashboardApp.query([("c", container), ("env", environment.rawValue), ("zone", zone)] + user)
        }
        func recordQ(_ name: String) -> String {
            PageContext.recordQuery(container: container, environment: environment, zone: zone, record: name, user: user)
        }
    }

    static func location(_ context: PageContext) async throws -> Location {
        Location(
            container: try await context.container(), environment: try context.environment(),
            zone: context.argument("zone").flatMap { $0.isEmpty ? nil : $0 } ?? "_defaultZone", user: context.userPairs)
    }

    /// Users' private databases are read-only here: the operator is not the user.
    static func requirePublic(_ context: PageContext) throws {
        guard context.userArgument == nil else {
            throw DashboardError(
                status: .forbidden, title: "Read-only", message: "The dashboard only reads users' private databases.")
        }
    }

    /// `GET /dashboard/record?c=…&env=…&zone=…&record=…`.
    static func show(_ context: PageContext) async throws -> Response {
        let location = try await location(context)
        let name = try context.required("record", what: "record name")
        let record = try await lookup(context, location, name)
        let notice = context.argument("saved") != nil ? "Saved." : nil
        return page(context, location, record: record, message: notice, conflict: nil)
    }

    /// `GET /dashboard/record/new?c=…&env=…&zone=…`.
    static func new(_ context: PageContext) async throws -> Response {
        let location = try await location(context)
        var values = base(location, title: "New record")
        values["fieldTypes"] = FieldDisplay.formTypes
        return context.render("recordForm", values)
    }

    /// The record as `records/lookup` answers it; NOT_FOUND as an error page.
    static func lookup(_ context: PageContext, _ location: Location, _ name: String) async throws -> JSON {
        let answer = try await context.perform(
            .recordsLookup, container: location.container, environment: location.environment,
            body: ["records": [["recordName": .string(name)]], "zoneID": location.zoneID])
        guard let record = answer["records"]?.array?.first else {
            throw DashboardError(status: .notFound, title: "No such record", message: "No record \(name).")
        }
        if let code = record["serverErrorCode"]?.string {
            throw DashboardError(
                status: code == "NOT_FOUND" ? .notFound : .badRequest, title: code, message: record["reason"]?.string ?? code)
        }
        return record
    }

    static func base(_ location: Location, title: String) -> [String: Any] {
        [
            "title": title, "container": location.container, "environment": location.environment.rawValue,
            "zone": location.zone, "recordsQ": location.recordsQ,
        ]
    }

    /// The record page: fields shown and an edit form, with a notice or a conflict.
    static func page(
        _ context: PageContext, _ location: Location, record: JSON, message: String?, conflict: String?,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let name = record["recordName"]?.string ?? ""
        let fields = (record["fields"]?.object ?? [:]).sorted { $0.key < $1.key }.map { key, value in
            FieldDisplay(name: key, field: value) { zone, recordName in
                var target = location
                if let zone { target.zone = zone }
                return target.recordQ(recordName)
            }.values
        }
        var values = base(location, title: name)
        let more: [String: Any] = [
            "recordName": name, "recordType": record["recordType"]?.string ?? "",
            "changeTag": record["recordChangeTag"]?.string ?? "", "traceQ": DashboardApp.query([("q", name)]),
            "created": record["created"]?["timestamp"]?.int64.map(Format.date) ?? "",
            "createdBy": record["created"]?["userRecordName"]?.string ?? "",
            "modified": record["modified"]?["timestamp"]?.int64.map(Format.date) ?? "",
            "modifiedBy": record["modified"]?["userRecordName"]?.string ?? "",
            "fields": fields, "fieldTypes": FieldDisplay.formTypes, "json": FieldDisplay.redactingEncrypted(record).serialized(),
            "message": message as Any, "conflict": conflict as Any, "public": context.userArgument == nil,
        ]
        values.merge(more) { $1 }
        return context.render("record", values, status: status)
    }

    /// `POST /dashboard/record/save`: `create` without a change tag, else `update` of the
    /// fields whose text changed, with the change tag the form was made from.
    static func save(_ context: PageContext) async throws -> Response {
        try requirePublic(context)
        let location = try await location(context)
        let form = context.form
        let tag = form["changeTag"].flatMap { $0.isEmpty ? nil : $0 }
        let recordType = try context.required("recordType", what: "record type")
        let name = form["recordName"].flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString
        var fields: [String: JSON] = [:]
        for (key, text) in form.values where key.hasPrefix("f:") {
            let field = String(key.dropFirst(2))
            guard let type = form["t:" + field] else { continue }
            if tag != nil, form["o:" + field] == text { continue }  // unchanged
            fields[field] = ["value": try FieldDisplay.wireValue(text, type: type, field: field), "type": .string(type)]
        }
        if let newName = form["newName"]?.trimmingCharacters(in: .whitespaces), !newName.isEmpty {
            let type = form["newType"] ?? "STRING"
            fields[newName] = [
                "value": try FieldDisplay.wireValue(form["newValue"] ?? "", type: type, field: newName), "type": .string(type),
            ]
        }
        var record: [String: JSON] = [
            "recordName": .string(name), "recordType": .string(recordType), "fields": .object(fields),
        ]
        if let tag { record["recordChangeTag"] = .string(tag) }
        let body: JSON = [
            "operations": [["operationType": .string(tag == nil ? "create" : "update"), "record": .object(record)]],
            "zoneID": location.zoneID,
        ]
        let answer = try await context.perform(
            .recordsModify, container: location.container, environment: location.environment, body: body)
        if let failure = try await failure(context, location, answer: answer, name: name, tag: tag, verb: "saved") {
            return failure
        }
        return DashboardApp.redirect(to: "/dashboard/record?" + location.recordQ(name) + "&saved=1")
    }

    /// `POST /dashboard/record/delete`: `delete` with the change tag.
    static func delete(_ context: PageContext) async throws -> Response {
        try requirePublic(context)
        let location = try await location(context)
        let name = try context.required("recordName", what: "record name")
        let tag = try context.required("changeTag", what: "change tag")
        let body: JSON = [
            "operations": [
                ["operationType": "delete", "record": ["recordName": .string(name), "recordChangeTag": .string(tag)]]
            ],
            "zoneID": location.zoneID,
        ]
        let answer = try await context.perform(
            .recordsModify, container: location.container, environment: location.environment, body: body)
        if let failure = try await failure(context, location, answer: answer, name: name, tag: tag, verb: "deleted") {
            return failure
        }
        return DashboardApp.redirect(to: "/dashboard/records?" + location.recordsQ)
    }

    /// The page for a refused save or delete: a conflict shows the server's current record
    /// beside the message; other refusals are error pages.
    static func failure(
        _ context: PageContext, _ location: Location, answer: JSON, name: String, tag: String?, verb: String
    ) async throws -> Response? {
        guard let item = answer["records"]?.array?.first, let code = item["serverErrorCode"]?.string else { return nil }
        let reason = item["reason"]?.string ?? code
        guard code == "CONFLICT", let tag else {
            throw DashboardError(status: HTTPResponse.Status(code: ServerErrorCode(rawValue: code)?.httpStatus ?? 400), title: code, message: reason)
        }
        let current = try await lookup(context, location, name)
        let message =
            "Conflict: this record changed since you opened it (your change tag \(tag), the server's "
            + "\(current["recordChangeTag"]?.string ?? "?")). Nothing was \(verb). Below is the current record; "
            + "edit it again if your change still applies."
        return page(context, location, record: current, message: nil, conflict: message, status: .conflict)
    }
}

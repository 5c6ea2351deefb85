import Instrumentation
import NimbusProtocol
import NimbusStore
import Tracing

/// The hops a traced `records/modify` adds to its request's span: the records it names, each
/// record's outcome, and a `commit` span with the database version and the notifications the
/// commit created — or why nobody will hear of it ("no subscription matched").
struct ModifyTrace {
    let request: NimbusSpan
    let commit: NimbusSpan
    let names: [String]

    /// `nil` when the request is not traced.
    init?(tracer: NimbusTracer?, zone: String, call: APICall, names: [String]) {
        guard let tracer, let request = ServiceContext.currentSpan else { return nil }
        self.request = request
        self.names = names
        let database = call.database
        request.attributes["container"] = database.container
        request.attributes["environment"] = database.environment.rawValue
        request.attributes["database"] = database.scope.rawValue
        request.attributes["zone"] = zone
        request.attributes["records"] = Int64(names.count)
        request.attributes["nimbus.records"] = names
        commit = tracer.startSpan("commit", context: request.context, ofKind: .internal)
        commit.attributes["nimbus.records"] = names
    }

    /// The transaction failed as a whole (a conflict in an atomic batch, the store).
    func failed(_ error: any Error) {
        let code = (error as? CloudKitError)?.code.rawValue ?? ServerErrorCode.internalError.rawValue
        commit.fail(code: code, message: "nothing was written: \((error as? CloudKitError)?.reason ?? "the store failed")")
        commit.end()
    }

    /// The transaction ended: which records were written, which were refused and why, and who
    /// will be notified.
    func committed(_ outcome: ModifyOutcome) {
        var failures: [(name: String, error: CloudKitError)] = []
        for (index, result) in outcome.results.enumerated() where index < names.count {
            if case .failed(let error) = result { failures.append((names[index], error)) }
        }
        if let first = failures.first {
            let listed = failures.prefix(5).map { "\($0.name): \($0.error.code.rawValue) (\($0.error.reason))" }
            request.fail(
                code: first.error.code.rawValue,
                message: "\(failures.count) of \(names.count) record(s) refused — " + listed.joined(separator: "; "))
            request.attributes["refused"] = failures.map(\.name).joined(separator: ", ")
        }
        if let summary = outcome.commit {
            commit.attributes["version"] = summary.version
            commit.attributes["notifications"] = Int64(summary.notifications.count)
            if summary.notifications.isEmpty {
                commit.attributes["nimbus.message"] =
                    "committed; no subscription matched, so no device is notified (devices see it on their next fetch)"
            } else {
                let subscriptions = Set(summary.notifications.map(\.subscriptionID)).sorted()
                let users = Set(summary.notifications.map(\.recipient.userRecordName)).count
                commit.attributes["subscriptions"] = subscriptions.joined(separator: ", ")
                commit.attributes["nimbus.message"] =
                    "committed; \(summary.notifications.count) notification(s) for \(users) user(s)"
            }
        } else {
            commit.attributes["nimbus.message"] = "nothing was written"
            if let first = failures.first { commit.fail(code: first.error.code.rawValue, message: "nothing was written") }
        }
        commit.end()
    }
}

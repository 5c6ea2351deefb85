import Instrumentation
import NimbusProtocol
import NimbusStore
import Tracing
import W3CTraceContext

/// The hops a traced `records/modify` adds to its request's span: the records it names, each
/// record's outcome, and a `commit` hop with the database version and the notifications the
/// commit created — or why nobody will hear of it ("no subscription matched").
///
/// The commit is a ``ChildHop`` the request span keeps and writes when it ends, not a span
/// object of its own.
struct ModifyTrace {
    let request: NimbusSpan
    let names: [String]
    private let commitID: SpanID
    private let commitStart: Int64
    private let database: DatabaseKey

    /// `nil` when the request is not traced.
    init?(tracer: NimbusTracer?, zone: String, call: APICall, names: @autoclosure () -> [String]) {
        guard let tracer, let request = ServiceContext.currentSpan else { return nil }
        let names = names()
        self.request = request
        self.names = names
        let database = call.database
        request.update { facts in
            facts["container"] = database.container
            facts["environment"] = database.environment.rawValue
            facts["database"] = database.scope.rawValue
            facts["zone"] = zone
            facts["records"] = String(names.count)
            facts.recordNames = names
        }
        // The request span names the records; the commit is found through its trace.
        self.database = database
        commitID = tracer.newSpanID()
        commitStart = NimbusTracer.nowMicros
    }

    /// The `traceparent` that names the commit as the parent of the notifications it creates.
    var commitTraceParent: String {
        TraceText.traceParent(request.traceContext.traceID, commitID, flags: request.traceContext.flags)
    }

    /// The transaction failed as a whole (a conflict in an atomic batch, the store).
    func failed(_ error: any Error) {
        var commit = commitHop()
        let code = (error as? CloudKitError)?.code.rawValue ?? ServerErrorCode.internalError.rawValue
        commit.fail(code: code, message: "nothing was written: \((error as? CloudKitError)?.reason ?? "the store failed")")
        request.add(commit)
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
            request.update { $0["refused"] = failures.map(\.name).joined(separator: ", ") }
        }
        var commit = commitHop()
        if let summary = outcome.commit {
            commit.facts["version"] = String(summary.version)
            commit.facts["notifications"] = String(summary.notifications.count)
            if summary.notifications.isEmpty {
                commit.facts.message =
                    "committed; no subscription matched, so no device is notified (devices see it on their next fetch)"
            } else {
                let subscriptions = Set(summary.notifications.map(\.subscriptionID)).sorted()
                let users = Set(summary.notifications.map(\.recipient.userRecordName)).count
                commit.facts["subscriptions"] = subscriptions.joined(separator: ", ")
                commit.facts.message = "committed; \(summary.notifications.count) notification(s) for \(users) user(s)"
            }
        } else if let first = failures.first {
            commit.fail(code: first.error.code.rawValue, message: "nothing was written")
        } else {
            commit.facts.message = "nothing was written"
        }
        request.add(commit)
    }

    /// The commit hop, ending now, with the facts every commit has.
    private func commitHop() -> ChildHop {
        var facts = SpanFacts()
        facts["container"] = database.container
        facts["database"] = database.scope.rawValue
        return ChildHop(name: "commit", spanID: commitID, startMicros: commitStart, endMicros: NimbusTracer.nowMicros, facts: facts)
    }
}

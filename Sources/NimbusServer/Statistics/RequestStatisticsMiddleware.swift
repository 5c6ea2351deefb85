import Hummingbird

/// Feeds ``RequestStatistics``: each request's operation (the API operation, or the kind of
/// route), status and time to the response head.
struct RequestStatisticsMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let statistics: RequestStatistics

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let operation = Self.operation(ofPath: request.uri.path)
        do {
            let response = try await next(request, context)
            statistics.record(operation: operation, status: response.status.code, duration: .now - start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            statistics.record(operation: operation, status: status, duration: .now - start)
            throw error
        }
    }

    /// `records/modify` for the API, `assets/download`, `dashboard`, `health`, `metrics`…, `other`:
    /// a small, fixed set of names whatever paths clients send.
    static func operation(ofPath path: String) -> String {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard let first = parts.first else { return "dashboard" }
        switch first {
        case "database":
            guard parts.count >= 5 else { return "other" }
            let scoped = parts[4] == "public" || parts[4] == "private" || parts[4] == "shared"
            let rest = parts[(scoped ? 5 : 4)...]
            // Most operations are one word after the database: no joining.
            let name = rest.count == 1 ? String(rest[rest.startIndex]) : rest.joined(separator: "/")
            return APIOperation(rawValue: name)?.rawValue ?? "other"
        case "assets":
            return parts.count >= 3 && (parts[2] == "upload" || parts[2] == "download") ? "assets/\(parts[2])" : "other"
        case "dashboard": return "dashboard"
        case "push", "webcourier": return "push"
        case "health": return "health"
        case "metrics": return "metrics"
        default: return "other"
        }
    }
}

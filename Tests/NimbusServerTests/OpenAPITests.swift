import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// Keeps `Sources/NimbusServer/Resources/openapi.yaml` true: every route the server
/// registers — and, behind `/database/**`, every ``APIOperation`` with each of its HTTP
/// methods, in each form the server addresses it — must have a path (and that method) in
/// the document the server serves, with the error statuses the server can answer it with;
/// and the document must not describe routes that do not exist. (CI also fuzzes the server
/// against the document: `scripts/fuzz-api.sh`.)
///
/// Adding a route? Add its path to `openapi.yaml` (block-style YAML, as the rest of it).
@Suite("OpenAPI document")
struct OpenAPITests {
    static let apiPrefix = "/database/1/{container}/{environment}/{database}/"
    /// The prefix of the operations addressed without a database (``APIOperation/isDatabaseless``).
    static let environmentPrefix = "/database/1/{container}/{environment}/"

    /// The prefix of the push-token operations CloudKit JS sends under `/device/1/` (``APIOperation/isDeviceOperation``).
    static let devicePrefix = "/device/1/{container}/{environment}/"

    /// The OpenAPI paths of a CloudKit operation: with the database segment, and for the
    /// operations of no database also without it (Apple's form; the server takes both).
    static func apiPaths(_ operation: APIOperation) -> [String] {
        var paths = [apiPrefix + operation.rawValue]
        if operation.isDatabaseless { paths.append(environmentPrefix + operation.rawValue) }
        return paths
    }

    /// The OpenAPI paths an API route pattern serves for `operation`.
    static func paths(of route: String, _ operation: APIOperation) -> [String] {
        switch route {
        case "/database/**": return apiPaths(operation)
        case "/device/**": return operation.isDeviceOperation ? [devicePrefix + operation.rawValue] : []
        default: return []
        }
    }

    /// The route patterns that dispatch on ``APIOperation``.
    static let apiRoutes: Set<String> = ["/database/**", "/device/**"]

    /// The error statuses any CloudKit operation can answer, whatever it does: a bad path
    /// segment, body or method (400), credentials (401, 421, 403 for a key on a private
    /// database), an unknown operation or zone (404), a body over the limit (413), a client
    /// over its share (429), a failure (500), a stopping server or racing schema (503).
    static let sharedErrorStatuses: Set<String> = ["400", "401", "403", "404", "413", "421", "429", "500", "503"]

    /// The statuses a plain GET of the push channel can answer besides its 101.
    static let pushErrorStatuses: Set<String> = ["400", "401", "403", "421", "500"]

    @Test("the served document describes every route and every operation method")
    func documentDescribesEveryRoute() async throws {
        try await TestServer.with { server in
            let (status, contentType, text) = try await Self.fetchDocument(server)
            #expect(status == 200)
            #expect(contentType?.contains("yaml") == true)
            #expect(text.hasPrefix("openapi: 3."), "the document must start with `openapi: 3.x`")

            let documented = OpenAPIPaths.parse(text)
            #expect(!documented.isEmpty, "no paths found in the served openapi.yaml")

            let routes = server.server.routes
            #expect(!routes.isEmpty)
            var missing: [String] = []
            var apiMethods = Set<String>()
            for route in routes {
                if Self.apiRoutes.contains(route.path) {
                    if route.path == "/database/**" { apiMethods.insert(route.method) }
                    for operation in APIOperation.allCases where operation.methods.contains(route.method) {
                        for path in Self.paths(of: route.path, operation) where documented[path]?.contains(route.method) != true {
                            missing.append("\(route.method) \(path)  (APIOperation.\(operation))")
                        }
                    }
                } else if route.path.contains("*") {
                    Issue.record(
                        "route \(route) uses a wildcard the OpenAPI test cannot expand: list what it serves here")
                } else if documented[route.path]?.contains(route.method) != true {
                    missing.append("\(route.method) \(route.path)")
                }
            }
            #expect(missing.isEmpty, "routes missing from openapi.yaml:\n\(missing.joined(separator: "\n"))")

            // Every method an operation answers must reach it through the router.
            for operation in APIOperation.allCases {
                for method in operation.methods {
                    #expect(
                        apiMethods.contains(method),
                        "APIOperation.\(operation) answers \(method) but no \(method) /database/** route is registered")
                }
            }
        }
    }

    @Test("the document describes no route the server does not serve")
    func documentHasNoStaleRoutes() async throws {
        try await TestServer.with { server in
            let text = try await Self.fetchDocument(server).text
            let routes = Set(server.server.routes.map { "\($0.method) \($0.path)" })
            var stale: [String] = []
            for (path, methods) in OpenAPIPaths.parse(text) {
                for method in methods {
                    if path.hasPrefix(Self.environmentPrefix) || path.hasPrefix(Self.devicePrefix) {
                        let route = path.hasPrefix(Self.devicePrefix) ? "/device/**" : "/database/**"
                        let served = APIOperation.allCases.contains { operation in
                            operation.methods.contains(method) && Self.paths(of: route, operation).contains(path)
                        }
                        if !served || !routes.contains("\(method) \(route)") { stale.append("\(method) \(path)") }
                    } else if !routes.contains("\(method) \(path)") {
                        stale.append("\(method) \(path)")
                    }
                }
            }
            #expect(stale.isEmpty, "openapi.yaml describes routes the server does not have:\n\(stale.joined(separator: "\n"))")
        }
    }

    @Test("every operation documents the errors the server can answer it with")
    func operationsDocumentTheirErrors() throws {
        let operations = OpenAPIPaths.parseOperations(OpenAPIDocument.text)
        var gaps: [String] = []
        for (path, methods) in operations {
            let required: Set<String>
            if path.hasPrefix(Self.environmentPrefix) || path.hasPrefix(Self.devicePrefix) {
                required = Self.sharedErrorStatuses
            } else if path.hasPrefix("/push/") {
                required = Self.pushErrorStatuses
            } else if path.hasPrefix("/webcourier/") {
                required = ["400", "404", "500"]
            } else {
                required = []
            }
            for (method, statuses) in methods {
                #expect(!statuses.isEmpty, "\(method) \(path) documents no response")
                let absent = required.subtracting(statuses)
                if !absent.isEmpty { gaps.append("\(method) \(path): \(absent.sorted().joined(separator: ", "))") }
            }
        }
        #expect(gaps.isEmpty, "operations missing error responses in openapi.yaml:\n\(gaps.sorted().joined(separator: "\n"))")
        // Every status an error of a whole request travels with is documented somewhere
        // (CONFLICT, EXISTS and VALIDATING_REFERENCE_ERROR come only as items of a 200).
        let documented = Set(operations.values.flatMap { $0.values.flatMap { $0 } })
        let itemOnly: Set<ServerErrorCode> = [.conflict, .exists, .validatingReferenceError]
        let codes = Set(ServerErrorCode.allCases.filter { !itemOnly.contains($0) }.map { String($0.httpStatus) })
        #expect(codes.subtracting(documented).isEmpty, "statuses of error codes no operation documents: \(codes.subtracting(documented).sorted())")
    }

    @Test("operationIds are unique, component references resolve, no key is doubled or empty")
    func operationIDsAndReferences() {
        let text = OpenAPIDocument.text
        let problems = OpenAPIPaths.structuralProblems(text)
        #expect(problems.isEmpty, "openapi.yaml:\n\(problems.joined(separator: "\n"))")
        let ids = text.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("operationId:") else { return nil }
            return trimmed.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces)
        }
        #expect(ids.count == Set(ids).count, "duplicate operationIds: \(Dictionary(grouping: ids, by: { $0 }).filter { $1.count > 1 }.keys.sorted())")
        // `$ref: "#/components/KIND/NAME"` must name a NAME defined under `components: KIND:`.
        var defined = Set<String>()
        var kind: String?
        for line in text.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if indent == 2, let key = OpenAPIPaths.mappingKey(trimmed) { kind = key } else if indent == 0 { kind = nil }
            if indent == 4, let kind, let key = OpenAPIPaths.mappingKey(trimmed) { defined.insert("\(kind)/\(key)") }
        }
        var unresolved = Set<String>()
        var rest = Substring(text)
        while let range = rest.range(of: "\"#/components/") {
            let after = rest[range.upperBound...]
            guard let end = after.firstIndex(of: "\"") else { break }
            let reference = String(after[..<end])
            if !defined.contains(reference) { unresolved.insert(reference) }
            rest = after[end...]
        }
        #expect(unresolved.isEmpty, "references to undefined components: \(unresolved.sorted())")
    }

    @Test("the path extraction reads block-style YAML")
    func pathExtraction() {
        let yaml = """
            openapi: 3.0.3
            info:
              title: x
            paths:
              /a/{id}:
                parameters:
                  - name: id
                get:
                  responses: {}
                post:
                  responses: {}
              "/b":
                # a comment
                delete:
                  description: |
                    get:
                      not a method
            components:
              schemas: {}
            """
        let paths = OpenAPIPaths.parse(yaml)
        #expect(paths == ["/a/{id}": ["GET", "POST"], "/b": ["DELETE"]])
        let operations = OpenAPIPaths.parseOperations(
            """
            paths:
              /a:
                get:
                  responses:
                    "200":
                      description: ok
                      content: {}
                    "400": {$ref: x}
                    default: {$ref: y}
                  tags: [a]
                post:
                  summary: none
            """)
        #expect(operations == ["/a": ["GET": ["200", "400", "default"], "POST": []]])
        let broken = """
            a:
              b: 1
              c:
              b: 2
            list:
              - name: x
                in: query
              - name: y
                in: path
            d:
              e: |
                e: not a key
              e: 3
            """
        #expect(
            OpenAPIPaths.structuralProblems(broken) == [
                "line 3: 'c' has no value", "line 4: 'b' appears twice in one mapping",
                "line 13: 'e' appears twice in one mapping",
            ])
    }

    static func fetchDocument(_ server: TestServer) async throws -> (status: Int, contentType: String?, text: String) {
        let request = HTTPClientRequest(url: "\(server.server.baseURL)/openapi.yaml")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), response.headers.first(name: "Content-Type"), String(buffer: body))
    }
}

/// A small extraction of `paths` → HTTP methods → response status keys from a block-style
/// OpenAPI YAML document (Yams is not a dependency). It reads the keys one indentation level
/// under `paths:` as paths, the HTTP-method keys one level under each path as its
/// operations, and the keys one level under an operation's `responses:` as its statuses;
/// block scalars (`|`, `>`) and comments are skipped.
enum OpenAPIPaths {
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// Paths and their methods.
    static func parse(_ text: String) -> [String: Set<String>] {
        parseOperations(text).mapValues { Set($0.keys) }
    }

    /// Paths → methods (uppercased) → the response keys of that operation (`"200"`, `default`).
    static func parseOperations(_ text: String) -> [String: [String: Set<String>]] {
        var result: [String: [String: Set<String>]] = [:]
        var inPaths = false
        var pathIndent: Int?
        var methodIndent: Int?
        var currentPath: String?
        var currentMethod: String?
        var operationIndent: Int?  // the keys of the current operation (`responses`, `tags`, …)
        var responsesIndent: Int?  // the `responses:` key, while inside it
        var statusIndent: Int?
        var blockScalarIndent: Int?  // skip lines more indented than the key that opened `|`/`>`

        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let indent = line.prefix { $0 == " " }.count
            if let blockIndent = blockScalarIndent {
                if indent > blockIndent { continue }
                blockScalarIndent = nil
            }
            if trimmed.hasSuffix("|") || trimmed.hasSuffix(">") || trimmed.hasSuffix("|-") || trimmed.hasSuffix(">-") {
                blockScalarIndent = indent
            }
            if indent == 0 {
                inPaths = trimmed == "paths:"
                (pathIndent, methodIndent, currentPath, currentMethod) = (nil, nil, nil, nil)
                continue
            }
            guard inPaths, let key = mappingKey(trimmed) else { continue }
            if pathIndent == nil { pathIndent = indent }
            if indent == pathIndent {
                currentPath = key
                (methodIndent, currentMethod) = (nil, nil)
                if result[key] == nil { result[key] = [:] }
            } else if let path = currentPath, let pathIndent, indent > pathIndent {
                if methodIndent == nil { methodIndent = indent }
                if indent == methodIndent {
                    currentMethod = methods.contains(key) ? key.uppercased() : nil
                    (operationIndent, responsesIndent, statusIndent) = (nil, nil, nil)
                    if let method = currentMethod { result[path, default: [:]][method] = [] }
                } else if let method = currentMethod, let methodIndent, indent > methodIndent {
                    if operationIndent == nil { operationIndent = indent }
                    if indent == operationIndent {
                        responsesIndent = key == "responses" ? indent : nil
                        statusIndent = nil
                    } else if let responsesIndent, indent > responsesIndent {
                        if statusIndent == nil { statusIndent = indent }
                        if indent == statusIndent { result[path]?[method]?.insert(key) }
                    }
                }
            }
        }
        return result
    }

    /// Keys written twice in one mapping and keys with no value (YAML reads both without
    /// complaint: the last duplicate wins, an empty value is null), by line number. Block
    /// scalars and comments are skipped; `- ` list items open a mapping of their own.
    static func structuralProblems(_ text: String) -> [String] {
        var problems: [String] = []
        // The open mappings, innermost last: the indent of the line that owns each (a key or
        // a list item's dash; -1 for the document) and the keys seen in it so far.
        var stack: [(indent: Int, keys: Set<String>)] = [(-1, [])]
        var pendingEmpty: (line: Int, indent: Int, key: String)?
        var blockScalarIndent: Int?
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(rawLine)
            var trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            var indent = line.prefix { $0 == " " }.count
            if let blockIndent = blockScalarIndent {
                if indent > blockIndent { continue }
                blockScalarIndent = nil
            }
            if let pending = pendingEmpty, indent <= pending.indent {
                problems.append("line \(pending.line + 1): '\(pending.key)' has no value")
            }
            pendingEmpty = nil
            if trimmed.hasPrefix("- ") {
                // A list item: a new mapping whose keys sit two columns in.
                while let top = stack.last, top.indent >= indent { stack.removeLast() }
                stack.append((indent, []))
                trimmed = String(trimmed.dropFirst(2)).trimmingCharacters(in: .whitespaces)
                indent += 2
            }
            if trimmed.hasSuffix("|") || trimmed.hasSuffix(">") || trimmed.hasSuffix("|-") || trimmed.hasSuffix(">-") {
                blockScalarIndent = indent
            }
            guard let key = mappingKey(trimmed) else { continue }
            while let top = stack.last, top.indent >= indent { stack.removeLast() }
            if stack[stack.count - 1].keys.contains(key) {
                problems.append("line \(number + 1): '\(key)' appears twice in one mapping")
            }
            stack[stack.count - 1].keys.insert(key)
            stack.append((indent, []))
            if trimmed.hasSuffix(":") { pendingEmpty = (number, indent, key) }
        }
        return problems
    }

    /// The key of a `key:` or `key: value` line (quotes removed), or `nil` for list items and scalars.
    static func mappingKey(_ trimmed: String) -> String? {
        guard !trimmed.hasPrefix("- ") else { return nil }
        var key: Substring
        if let quote = trimmed.first, quote == "\"" || quote == "'" {
            let rest = trimmed.dropFirst()
            guard let end = rest.firstIndex(of: quote) else { return nil }
            key = rest[..<end]
            guard rest[rest.index(after: end)...].hasPrefix(":") else { return nil }
        } else {
            guard let colon = trimmed.range(of: ":") else { return nil }
            let after = trimmed[colon.upperBound...]
            guard after.isEmpty || after.hasPrefix(" ") else { return nil }
            key = trimmed[..<colon.lowerBound]
        }
        return String(key)
    }
}

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import Testing

/// Keeps `Sources/NimbusServer/Resources/openapi.yaml` true: every route the server
/// registers — and, behind `/database/**`, every ``APIOperation`` with each of its HTTP
/// methods — must have a path (and that method) in the document the server serves, and the
/// document must not describe routes that do not exist.
///
/// Adding a route? Add its path to `openapi.yaml` (block-style YAML, as the rest of it).
@Suite("OpenAPI document")
struct OpenAPITests {
    /// The OpenAPI path of a CloudKit operation.
    static func apiPath(_ operation: APIOperation) -> String {
        "/database/1/{container}/{environment}/{database}/\(operation.rawValue)"
    }

    static let apiPrefix = "/database/1/{container}/{environment}/{database}/"

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
                if route.path == "/database/**" {
                    apiMethods.insert(route.method)
                    for operation in APIOperation.allCases where operation.methods.contains(route.method) {
                        let path = Self.apiPath(operation)
                        if documented[path]?.contains(route.method) != true {
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
                    if path.hasPrefix(Self.apiPrefix) {
                        let name = String(path.dropFirst(Self.apiPrefix.count))
                        guard let operation = APIOperation(rawValue: name), operation.methods.contains(method),
                            routes.contains("\(method) /database/**")
                        else {
                            stale.append("\(method) \(path)")
                            continue
                        }
                    } else if !routes.contains("\(method) \(path)") {
                        stale.append("\(method) \(path)")
                    }
                }
            }
            #expect(stale.isEmpty, "openapi.yaml describes routes the server does not have:\n\(stale.joined(separator: "\n"))")
        }
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
    }

    static func fetchDocument(_ server: TestServer) async throws -> (status: Int, contentType: String?, text: String) {
        let request = HTTPClientRequest(url: "\(server.server.baseURL)/openapi.yaml")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), response.headers.first(name: "Content-Type"), String(buffer: body))
    }
}

/// A small extraction of `paths` → HTTP methods from a block-style OpenAPI YAML document
/// (Yams is not a dependency). It reads the keys one indentation level under `paths:` as
/// paths and the HTTP-method keys one level under each path as its operations; block
/// scalars (`|`, `>`) and comments are skipped.
enum OpenAPIPaths {
    static let methods: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    static func parse(_ text: String) -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        var inPaths = false
        var pathIndent: Int?
        var methodIndent: Int?
        var currentPath: String?
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
                pathIndent = nil
                methodIndent = nil
                currentPath = nil
                continue
            }
            guard inPaths, let key = mappingKey(trimmed) else { continue }
            if pathIndent == nil { pathIndent = indent }
            if indent == pathIndent {
                currentPath = key
                methodIndent = nil
                if result[key] == nil { result[key] = [] }
            } else if let currentPath, let pathIndent, indent > pathIndent {
                if methodIndent == nil { methodIndent = indent }
                if indent == methodIndent, methods.contains(key) {
                    result[currentPath, default: []].insert(key.uppercased())
                }
            }
        }
        return result
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

import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One scrape of a server's `/metrics`: each sample by its series, as the text names it
/// (`nimbus_http_requests_total{operation="records/modify",status="200"}`).
struct MetricsScrape: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var text: String
    var samples: [String: Double]

    /// The sample of `series`; 0 for a series not (yet) exported.
    subscript(_ series: String) -> Double { samples[series] ?? 0 }

    /// How much each series grew since `earlier`.
    func delta(_ series: String, since earlier: MetricsScrape) -> Double { self[series] - earlier[series] }

    static func of(_ baseURL: String, authorization: String? = nil) async throws -> MetricsScrape {
        var request = HTTPClientRequest(url: "\(baseURL)/metrics")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        return MetricsScrape(status: Int(response.status.code), headers: response.headers, text: text, samples: parse(text))
    }

    /// The samples of Prometheus text (comment lines skipped).
    static func parse(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}

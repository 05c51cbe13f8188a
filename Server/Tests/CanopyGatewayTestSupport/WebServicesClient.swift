import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// The container the Web Services tests serve, and the configuration that does.
enum WebServicesFixture {
    static let container = "iCloud.com.example.canopy"

    static func configuration(environment: WebServicesSettings.Environment = .production) -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.webServices = WebServicesSettings(container: container, environment: environment)
        return configuration
    }

    /// `canopy tokens api add --container … --json`: a new API token.
    static func apiToken(on endpoint: DatabaseEndpoint, container: String = container) throws -> String {
        let result = try CanopyBinary.run(["tokens", "api", "add", "--container", container, "--name", "tests", "--json", "--database-url", endpoint.url])
        #expect(result.succeeded, "\(result.output)")
        let line = result.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        return try #require(object?["token"] as? String, "\(result.output)")
    }
}

/// A Web Services answer: the status and the JSON body.
struct WebServicesAnswer: @unchecked Sendable {
    let status: HTTPResponse.Status
    let body: [String: Any]

    var records: [[String: Any]] { body["records"] as? [[String: Any]] ?? [] }
    var zones: [[String: Any]] { body["zones"] as? [[String: Any]] ?? [] }
    var code: String? { body["serverErrorCode"] as? String }
}

extension TestClientProtocol {
    /// POSTs `body` (JSON text, written as the reference's examples are)
    /// to `/database/1/{container}/production/{subpath}`.
    func webServices(
        _ subpath: String, _ body: String? = nil, apiToken: String?, webAuthToken: String? = nil,
        container: String = WebServicesFixture.container, environment: String = "production", method: HTTPRequest.Method = .post
    ) async throws -> WebServicesAnswer {
        var query: [String] = []
        if let apiToken { query.append("ckAPIToken=\(apiToken)") }
        if let webAuthToken { query.append("ckWebAuthToken=\(webAuthToken)") }
        let uri = "/database/1/\(container)/\(environment)/\(subpath)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        let response = try await execute(
            uri: uri, method: method, headers: [.contentType: "application/json"],
            body: body.map { ByteBuffer(string: $0) } ?? ByteBuffer()
        )
        let parsed = response.body.readableBytes == 0 ? [:] : (try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any] ?? [:])
        return WebServicesAnswer(status: response.status, body: parsed)
    }
}

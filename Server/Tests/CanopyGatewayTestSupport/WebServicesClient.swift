import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
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

    /// A new API token, made as `canopy tokens api add --container …`
    /// makes it (``ContainerTokenAdmin``), in-process: the database tier
    /// starts no program.
    static func apiToken(on endpoint: DatabaseEndpoint, container: String = container, signInCallback: String? = nil) async throws -> String {
        let (_, token) = try await TestDatabase.withConnection(endpoint) { connection in
            try await ContainerTokenAdmin(logger: Logger(label: "canopy.tests")).add(
                container: container, name: "tests", signInCallback: signInCallback, connection: connection)
        }
        return token.string
    }
}

/// A Web Services answer: the status and the JSON body.
struct WebServicesAnswer: @unchecked Sendable {
    let status: HTTPResponse.Status
    let body: [String: Any]
    var headers: HTTPFields = [:]

    var records: [[String: Any]] { body["records"] as? [[String: Any]] ?? [] }
    var zones: [[String: Any]] { body["zones"] as? [[String: Any]] ?? [] }
    var code: String? { body["serverErrorCode"] as? String }
}

extension TestClientProtocol {
    /// POSTs `body` (JSON text, written as the reference's examples are)
    /// to `/database/1/{container}/production/{subpath}`.
    func webServices(
        _ subpath: String, _ body: String? = nil, apiToken: String?, webAuthToken: String? = nil,
        container: String = WebServicesFixture.container, environment: String = "production", method: HTTPRequest.Method = .post,
        headers extra: HTTPFields = [:]
    ) async throws -> WebServicesAnswer {
        var query: [String] = []
        if let apiToken { query.append("ckAPIToken=\(apiToken)") }
        if let webAuthToken { query.append("ckWebAuthToken=\(webAuthToken)") }
        let uri = "/database/1/\(container)/\(environment)/\(subpath)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        var headers: HTTPFields = [.contentType: "application/json"]
        headers.append(contentsOf: extra)
        let response = try await execute(
            uri: uri, method: method, headers: headers,
            body: body.map { ByteBuffer(string: $0) } ?? ByteBuffer()
        )
        let parsed = response.body.readableBytes == 0 ? [:] : (try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any] ?? [:])
        return WebServicesAnswer(status: response.status, body: parsed, headers: response.headers)
    }
}

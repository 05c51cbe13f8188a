import AsyncHTTPClient
import Foundation
import NIOCore

/// Fetches a JWKS document. A protocol so a provider's key cache can be
/// driven by anything that speaks HTTP; the gateway uses ``HTTPKeySetFetcher``.
public protocol KeySetFetching: Sendable {
    /// The body of a 200 answer to GET `url`; throws with a short reason otherwise.
    func fetch(_ url: String) async throws -> Data
}

/// GET with async-http-client's shared client: 5 s to answer, 1 MiB at most.
public struct HTTPKeySetFetcher: KeySetFetching {
    let timeout: TimeAmount
    let client: HTTPClient

    public init(timeout: TimeAmount = .seconds(5), client: HTTPClient = .shared) {
        self.timeout = timeout
        self.client = client
    }

    public func fetch(_ url: String) async throws -> Data {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await client.execute(request, timeout: timeout)
        guard response.status == .ok else {
            throw IdentityError(.configuration, "HTTP \(response.status.code) from \(url)")
        }
        let body = try await response.body.collect(upTo: 1 << 20)
        return Data(body.readableBytesView)
    }
}

import AsyncHTTPClient
import CanopyIdentity
import CanopyTestSupport
import Foundation
import Logging
import NIOCore
import Testing

/// `Server/Tests/python/identity_provider.py` as a separate process: a provider
/// whose tokens PyJWT signs and whose key set a real HTTP server on
/// loopback serves. Stops when the test drops it (its stdin closes).
final class IdentityProviderProcess: Sendable {
    static let issuer = "https://idp.canopy.test"
    static let audience = "com.example.fasting"

    let process: Process
    let input: Pipe
    let controlPort: Int
    let jwksPort: Int

    var jwksURL: String { "http://127.0.0.1:\(jwksPort)/jwks" }

    init() throws {
        let words: [String]
        do {
            (process, input, words) = try PythonService.start("identity_provider.py", words: 3)
        } catch {
            throw ProviderFailure(message: "\(error)")
        }
        guard let control = Int(words[1]), let jwks = Int(words[2]) else {
            throw ProviderFailure(message: "identity_provider.py said \(words)")
        }
        controlPort = control
        jwksPort = jwks
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// A configuration with this provider (by its JWKS URL) and any others.
    func configuration(extra: [IdentityProvider] = []) -> AuthConfiguration {
        AuthConfiguration(providers: [
            IdentityProvider(name: "idp", issuer: Self.issuer, otherIssuers: ["idp.canopy.test"], audiences: [Self.audience, "web"], keySource: .jwksURL(jwksURL)),
        ] + extra)
    }

    /// A verifier over this provider, as `canopy serve` builds one.
    func verifier(refetchInterval: Duration = .seconds(60), extra: [IdentityProvider] = [], logger: Logger) async -> TokenVerifier {
        await TokenVerifier(configuration: configuration(extra: extra), keyRefetchInterval: refetchInterval, logger: logger)
    }

    /// Standard claims for `subject`, valid now for ten minutes; `changes` override them.
    static func claims(_ subject: String, _ changes: [String: Any] = [:]) -> [String: Any] {
        let now = Int(Date().timeIntervalSince1970)
        var claims: [String: Any] = ["iss": issuer, "aud": audience, "sub": subject, "iat": now, "exp": now + 600]
        for (key, value) in changes { claims[key] = value }
        return claims
    }

    /// A token signed by `key` (see the script: rsa1, rsa2, ec1, none,
    /// hs-with-rsa1-public, hs-secret:SECRET).
    func mint(_ key: String = "rsa1", _ claims: [String: Any], header: [String: Any] = [:]) async throws -> String {
        let answer = try await control("/mint", ["key": key, "claims": claims, "header": header])
        return try #require(answer["token"] as? String)
    }

    /// Publishes exactly these keys in the JWKS from now on.
    func publish(_ keys: [String]) async throws {
        _ = try await control("/rotate", ["keys": keys])
    }

    /// Closes the key server: the provider is unreachable from now on.
    func stopKeyServer() async throws {
        _ = try await control("/stop-jwks", [:])
    }

    /// How many times the JWKS was fetched.
    func fetches() async throws -> Int {
        try #require(try await control("/fetches", nil)["fetches"] as? Int)
    }

    /// The JWKS document as it is served now.
    func keySetDocument() async throws -> Data {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: jwksURL), timeout: .seconds(5))
        return Data(buffer: try await response.body.collect(upTo: 1 << 20))
    }

    /// The provider's browser sign-in page (`GET /authorize`).
    var authorizationURL: String { "http://127.0.0.1:\(controlPort)/authorize" }

    /// The provider's token endpoint (`POST /token`: the code flow with PKCE, refresh tokens).
    var tokenURL: String { "http://127.0.0.1:\(controlPort)/token" }

    /// Where the control endpoints are (`/authorizations`, `/token-requests`).
    var controlURL: String { "http://127.0.0.1:\(controlPort)" }

    /// This provider with a browser sign-in block (client id "web"), as the
    /// console and CanopyJS offer it: the code flow with PKCE when
    /// `codeFlow`, else the implicit flow.
    func browserProvider(codeFlow: Bool) -> IdentityProvider {
        IdentityProvider(
            name: "idp", issuer: Self.issuer, audiences: [Self.audience, "web"], keySource: .jwksURL(jwksURL),
            signIn: BrowserSignIn(authorizationURL: authorizationURL, tokenURL: codeFlow ? tokenURL : nil, clientID: "web", label: "Sign in with Test IdP")
        )
    }

    /// Olivia, whom the browser sign-in tests sign in (olivia@example.com, verified).
    static var olivia: [String: Any] { ["iss": issuer, "sub": "olivia-1", "email": "olivia@example.com", "email_verified": true, "name": "Olivia"] }

    /// Who `/authorize` signs in from now on: the id token's claims (besides aud, iat, exp, nonce).
    func signInAs(_ claims: [String: Any]) async throws {
        _ = try await control("/sign-in-as", ["claims": claims])
    }

    /// The query parameters of every `/authorize` call so far.
    func authorizations() async throws -> [[String: String]] {
        try await control("/authorizations", nil)["authorizations"] as? [[String: String]] ?? []
    }

    private func control(_ path: String, _ body: [String: Any]?) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(controlPort)\(path)")
        if let body {
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let data = Data(buffer: try await response.body.collect(upTo: 1 << 20))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}

struct ProviderFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

import Foundation

/// How a browser signs in with a provider (the console's "Sign in with …"
/// button, CanopyJS's `container.signIn`): with `tokenURL`, OpenID
/// Connect's authorization code flow with PKCE, the code exchanged by the
/// browser as a public client; without it, the implicit flow
/// (`response_type=id_token`). Both with a nonce. Only what a browser needs
/// and may see: no client secret exists in either flow. Configured per
/// provider as `"signIn": {"authorizationURL": …, "tokenURL": …,
/// "clientID": …, "scope": …, "label": …}` (docs/IDENTITY.md).
public struct BrowserSignIn: Sendable, Equatable {
    /// The provider's authorization endpoint (`authorization_endpoint` of
    /// its discovery document).
    public let authorizationURL: String
    /// The provider's token endpoint (`token_endpoint`), when the provider
    /// lets a public client exchange a code with PKCE (nil: the implicit flow).
    public let tokenURL: String?
    /// The client id registered with the provider for the console; one of
    /// the provider's audiences, since the id token is issued for it.
    public let clientID: String
    /// The scopes asked for (default `openid email profile`).
    public let scope: String
    /// The button's words (default `Sign in with <provider name>`).
    public let label: String

    static let keys: Set<String> = ["authorizationURL", "tokenURL", "clientID", "scope", "label"]

    public init(authorizationURL: String, tokenURL: String? = nil, clientID: String, scope: String = "openid email profile", label: String) {
        self.authorizationURL = authorizationURL
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.scope = scope
        self.label = label
    }

    init(_ value: Any, provider: String, audiences: [String], fault: (String) -> IdentityError) throws(IdentityError) {
        guard let object = value as? [String: Any] else { throw fault("signIn must be a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !Self.keys.contains($0) }) {
            throw fault("signIn: unknown key '\(unknown)' (expected \(Self.keys.sorted().joined(separator: ", ")))")
        }
        guard let text = object["authorizationURL"] as? String, Self.isEndpoint(text) else {
            if let text = object["authorizationURL"] as? String, URL(string: text)?.host != nil {
                throw fault("signIn: authorizationURL \(text) must be https (http only on loopback)")
            }
            throw fault("signIn needs \"authorizationURL\": the provider's authorization endpoint, e.g. https://accounts.google.com/o/oauth2/v2/auth")
        }
        if let value = object["tokenURL"] {
            guard let tokenURL = value as? String, Self.isEndpoint(tokenURL) else {
                throw fault("signIn: tokenURL must be the provider's token endpoint, https (http only on loopback)")
            }
        }
        guard let clientID = object["clientID"] as? String, !clientID.isEmpty else {
            throw fault("signIn needs \"clientID\": the client id registered for the console")
        }
        guard audiences.contains(clientID) else {
            throw fault("signIn: clientID \(clientID) must be one of the provider's audiences (its id tokens are issued for it)")
        }
        if object["scope"] != nil, !(object["scope"] is String) { throw fault("signIn: scope must be a string") }
        if object["label"] != nil, !(object["label"] is String) { throw fault("signIn: label must be a string") }
        let scope = object["scope"] as? String ?? "openid email profile"
        guard scope.split(separator: " ").contains("openid") else { throw fault("signIn: scope must include openid") }
        authorizationURL = text
        tokenURL = object["tokenURL"] as? String
        self.clientID = clientID
        self.scope = scope
        label = object["label"] as? String ?? "Sign in with \(provider)"
    }

    /// An absolute https URL, or http on loopback.
    static func isEndpoint(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host else { return false }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
        return scheme == "https" || (scheme == "http" && loopback)
    }
}

/// One identity provider of the auth configuration: whose tokens (issuer),
/// for which apps (audiences), verified with which keys.
public struct IdentityProvider: Sendable {
    /// Where the provider's keys come from.
    public enum KeySource: Sendable {
        /// A JWKS fetched over HTTP(S), cached, and fetched again for an
        /// unknown `kid` (at most once a minute).
        case jwksURL(String)
        /// A JWKS read once from a file at start.
        case jwksFile(path: String, keys: KeySet)
        /// A shared HS256 secret: only when configured explicitly.
        case hs256Secret([UInt8])
    }

    /// How the configuration and the users' handles name it (`apple`).
    public let name: String
    /// The `iss` its tokens carry, compared exactly; what identities are
    /// stored under.
    public let issuer: String
    /// Other spellings of the same issuer (Google's `accounts.google.com`
    /// beside `https://accounts.google.com`): accepted as `iss`, and the
    /// person is the same as under ``issuer``.
    public let otherIssuers: [String]
    /// The `aud` values accepted: a token must name at least one.
    public let audiences: [String]
    public let keySource: KeySource
    /// How the web console signs people in with it, if it may.
    public let signIn: BrowserSignIn?

    public init(name: String, issuer: String, otherIssuers: [String] = [], audiences: [String], keySource: KeySource, signIn: BrowserSignIn? = nil) {
        self.name = name
        self.issuer = issuer
        self.otherIssuers = otherIssuers
        self.audiences = audiences
        self.keySource = keySource
        self.signIn = signIn
    }

    /// The algorithms its tokens may use: RS256 and ES256 for a key set,
    /// HS256 for a shared secret only.
    var issuers: [String] { [issuer] + otherIssuers }

    var algorithms: Set<String> {
        switch keySource {
        case .jwksURL, .jwksFile: ["RS256", "ES256"]
        case .hs256Secret: ["HS256"]
        }
    }
}

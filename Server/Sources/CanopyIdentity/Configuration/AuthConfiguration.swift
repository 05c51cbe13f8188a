import Foundation

/// The identity providers whose tokens the gateway accepts, read from the
/// JSON file of `--auth-config` / `CANOPY_AUTH_CONFIG` (docs/API.md §10):
///
/// ```json
/// {"providers": [
///   {"name": "apple", "issuer": "https://appleid.apple.com",
///    "audiences": ["com.example.fasting"], "jwksURL": "https://appleid.apple.com/auth/keys"},
///   {"name": "staff", "issuer": "https://sso.example.com", "audiences": ["canopy"],
///    "jwksFile": "/etc/canopy/staff-jwks.json"},
///   {"name": "supabase", "issuer": "https://xyz.supabase.co/auth/v1",
///    "audiences": ["authenticated"], "hs256Secret": "..."}]}
/// ```
///
/// Loading checks everything that can be checked without the network, so a
/// configuration that cannot work stops `canopy serve` before it listens,
/// with the file, the provider and the fault in one line.
public struct AuthConfiguration: Sendable {
    public let providers: [IdentityProvider]

    public init(providers: [IdentityProvider]) {
        self.providers = providers
    }

    /// Reads and checks the file at `path`.
    public static func load(path: String) throws(IdentityError) -> AuthConfiguration {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw IdentityError(.configuration, "auth config \(path): cannot be read (\(Self.reason(error)))")
        }
        return try parse(data, source: path)
    }

    /// Checks a configuration's JSON text; `source` names it in errors, and
    /// a relative `jwksFile` is read relative to the source's folder.
    public static func parse(_ data: Data, source: String) throws(IdentityError) -> AuthConfiguration {
        func fault(_ message: String) -> IdentityError { IdentityError(.configuration, "auth config \(source): \(message)") }
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw fault("is not JSON (\(Self.reason(error)))")
        }
        guard let object = root as? [String: Any] else { throw fault(#"must be a JSON object: {"providers": [...]}"#) }
        if let unknown = object.keys.sorted().first(where: { $0 != "providers" }) {
            throw fault("unknown key '\(unknown)' (the file holds \"providers\" only)")
        }
        guard let list = object["providers"] as? [Any], !list.isEmpty else {
            throw fault(#""providers" must be a non-empty array of providers"#)
        }
        let folder = URL(fileURLWithPath: source).deletingLastPathComponent()
        var providers: [IdentityProvider] = []
        for (index, entry) in list.enumerated() {
            let provider = try ProviderEntry(entry, index: index, folder: folder, fault: fault).provider
            if providers.contains(where: { $0.name == provider.name }) {
                throw fault("provider '\(provider.name)': the name is used twice")
            }
            for issuer in provider.issuers {
                if let other = providers.first(where: { $0.issuers.contains(issuer) }) {
                    throw fault("provider '\(provider.name)': issuer \(issuer) is already provider '\(other.name)''s")
                }
            }
            providers.append(provider)
        }
        return AuthConfiguration(providers: providers)
    }

    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, let text = underlying.localizedFailureReason ?? Optional(underlying.localizedDescription) {
            return text
        }
        return nsError.localizedDescription
    }
}

/// One element of `providers`, checked key by key.
private struct ProviderEntry {
    static let keys: Set<String> = ["name", "issuer", "otherIssuers", "audiences", "jwksURL", "jwksFile", "hs256Secret", "signIn"]
    let provider: IdentityProvider

    init(_ entry: Any, index: Int, folder: URL, fault: (String) -> IdentityError) throws(IdentityError) {
        guard let object = entry as? [String: Any] else { throw fault("providers[\(index)] must be a JSON object") }
        guard let name = object["name"] as? String, !name.isEmpty else {
            throw fault("providers[\(index)] needs a \"name\" (a string such as \"apple\")")
        }
        func providerFault(_ message: String) -> IdentityError { fault("provider '\(name)': \(message)") }
        guard name.range(of: "^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$", options: .regularExpression) != nil else {
            throw providerFault("the name must be 1-32 letters, digits, _ or -, starting with a letter or digit")
        }
        if let unknown = object.keys.sorted().first(where: { !Self.keys.contains($0) }) {
            throw providerFault("unknown key '\(unknown)' (expected \(Self.keys.sorted().joined(separator: ", ")))")
        }
        guard let issuer = object["issuer"] as? String, !issuer.isEmpty else {
            throw providerFault("needs an \"issuer\": the iss its tokens carry, e.g. \"https://accounts.google.com\"")
        }
        let otherIssuers = object["otherIssuers"] as? [String] ?? []
        if object["otherIssuers"] != nil, !(object["otherIssuers"] is [String]) || otherIssuers.contains(where: \.isEmpty) {
            throw providerFault("otherIssuers must be an array of issuer strings")
        }
        guard let audiences = object["audiences"] as? [String], !audiences.isEmpty, !audiences.contains(where: \.isEmpty) else {
            throw providerFault("needs \"audiences\": a non-empty array of the client ids its tokens are for")
        }
        let sources = ["jwksURL", "jwksFile", "hs256Secret"].filter { object[$0] != nil }
        guard sources.count == 1 else {
            throw providerFault(sources.isEmpty
                ? "no key source: give one of \"jwksURL\", \"jwksFile\" or \"hs256Secret\""
                : "give one key source, not \(sources.joined(separator: " and "))")
        }
        let keySource: IdentityProvider.KeySource
        switch sources[0] {
        case "jwksURL":
            guard let text = object["jwksURL"] as? String, let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host else {
                throw providerFault("jwksURL must be a URL string")
            }
            let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host)
            guard scheme == "https" || (scheme == "http" && loopback) else {
                throw providerFault("jwksURL \(text) must be https (http only on loopback)")
            }
            keySource = .jwksURL(text)
        case "jwksFile":
            guard let path = object["jwksFile"] as? String, !path.isEmpty else { throw providerFault("jwksFile must be a path") }
            let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : folder.appendingPathComponent(path)
            let data: Data
            do {
                data = try Data(contentsOf: url)
            } catch {
                throw providerFault("jwksFile \(url.path) cannot be read (\(AuthConfiguration.reason(error)))")
            }
            do {
                keySource = .jwksFile(path: url.path, keys: try KeySet(parsing: data))
            } catch {
                throw providerFault("jwksFile \(url.path): \(error.message)")
            }
        default:
            guard let secret = object["hs256Secret"] as? String else { throw providerFault("hs256Secret must be a string") }
            guard secret.utf8.count >= 32 else {
                throw providerFault("hs256Secret must be at least 32 bytes (an HS256 key shorter than its hash is guessable)")
            }
            keySource = .hs256Secret(Array(secret.utf8))
        }
        let signIn = try object["signIn"].map { value throws(IdentityError) in
            try BrowserSignIn(value, provider: name, audiences: audiences, fault: providerFault)
        }
        provider = IdentityProvider(name: name, issuer: issuer, otherIssuers: otherIssuers, audiences: audiences, keySource: keySource, signIn: signIn)
    }
}

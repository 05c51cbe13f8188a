import CanopyEncoding
import Crypto
import Foundation
import JWTKit
import Logging

/// Verifies identity-provider tokens (OpenID Connect ID tokens and other
/// JWTs) for the gateway, in the order docs/API.md §10 lists the checks:
///
/// 1. `alg` is one the provider allows (`none` never; HS256 only for a
///    provider configured with a shared secret);
/// 2. `iss` names a configured provider;
/// 3. `kid` selects one of its keys, whose own algorithm must be `alg`
///    (so a public key can never be used as an HMAC secret);
/// 4. the signature verifies (jwt-kit over swift-crypto);
/// 5. `aud` names an accepted audience, `exp` and `nbf` hold within 60 s
///    of skew, `sub` is present, and a `nonce` the request sent matches.
///
/// Each refusal is an ``IdentityError`` of kind `.refused` whose message
/// names the failed check.
public final class TokenVerifier: Sendable {
    /// The clock skew allowed on `exp` and `nbf`.
    public static let leeway: TimeInterval = 60

    public let providers: [IdentityProvider]
    /// By every issuer spelling.
    private let keys: [String: ProviderKeys]
    private let everyProvider: [ProviderKeys]
    let logger: Logger

    /// - Parameter keyRefetchInterval: the least time between two fetches of
    ///   one provider's key set (docs/API.md §10: a minute).
    public init(
        configuration: AuthConfiguration, fetcher: any KeySetFetching = HTTPKeySetFetcher(),
        keyRefetchInterval: Duration = .seconds(60), logger: Logger
    ) async {
        providers = configuration.providers
        var keys: [String: ProviderKeys] = [:]
        var everyProvider: [ProviderKeys] = []
        for provider in configuration.providers {
            let providerKeys = await ProviderKeys(provider: provider, fetcher: fetcher, refetchInterval: keyRefetchInterval, logger: logger)
            for issuer in provider.issuers { keys[issuer] = providerKeys }
            everyProvider.append(providerKeys)
        }
        self.keys = keys
        self.everyProvider = everyProvider
        self.logger = logger
    }

    /// Fetches every key set that comes by URL, so the first sign-in does
    /// not wait for it. A provider that cannot be reached is logged, not
    /// fatal: its keys are fetched again when a token needs them.
    public func prefetchKeys() async {
        await withTaskGroup(of: Void.self) { group in
            for keys in everyProvider {
                group.addTask { await keys.refresh() }
            }
        }
    }

    /// Whether `token` is shaped like a JWT (three base64url parts), as
    /// opposed to a Canopy token.
    public static func looksLikeJWT(_ token: String) -> Bool {
        token.utf8.count(where: { $0 == UInt8(ascii: ".") }) == 2
    }

    /// The identity a token proves, or the refusal naming the failed check.
    /// - Parameter nonce: the raw nonce the request sent (`Canopy-Nonce`).
    ///   A token that carries a `nonce` claim needs it, and the claim must
    ///   be its SHA-256 in hex; a request that sends one needs a token with
    ///   a nonce.
    public func verify(_ token: String, nonce: String? = nil, now: Date = Date()) async throws(IdentityError) -> VerifiedIdentity {
        let parsed = try UnverifiedToken(token)
        guard let algorithm = parsed.algorithm else { throw .refused("the JWT's header has no alg") }
        if algorithm.lowercased() == "none" { throw .refused("alg 'none' (an unsigned token) is refused") }
        guard let issuer = parsed.string("iss") else { throw .refused("the token has no iss (issuer) claim") }
        guard let providerKeys = keys[issuer] else {
            throw .refused("issuer \(quoted(issuer)) is not a configured provider")
        }
        let provider = providerKeys.provider
        guard provider.algorithms.contains(algorithm) else {
            throw .refused("alg \(quoted(algorithm)) is not allowed for provider '\(provider.name)' (allowed: \(provider.algorithms.sorted().joined(separator: ", ")))")
        }
        var key = try await providerKeys.key(kid: parsed.kid, algorithm: algorithm)
        if try await !Self.signatureVerifies(token, with: key, of: provider) {
            // A set whose one key has no kid cannot say it rotated: fetch it
            // again (at most once per interval) and try the key it holds then.
            if key.kid == nil, await providerKeys.isFetched {
                await providerKeys.refresh()
                key = try await providerKeys.key(kid: parsed.kid, algorithm: algorithm)
                if try await Self.signatureVerifies(token, with: key, of: provider) { return try identity(parsed, provider: provider, issuer: issuer, nonce: nonce, now: now) }
            }
            throw .refused("the signature does not verify with \(key.label) of provider '\(provider.name)'")
        }
        return try identity(parsed, provider: provider, issuer: issuer, nonce: nonce, now: now)
    }

    /// True when the signature verifies; a token jwt-kit cannot read is a refusal.
    private static func signatureVerifies(_ token: String, with key: ProviderKeys.Selected, of provider: IdentityProvider) async throws(IdentityError) -> Bool {
        do {
            _ = try await key.keys.verify(token, as: SignedPayload.self)
            return true
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            return false
        } catch {
            throw .refused("the token could not be verified with \(key.label) of provider '\(provider.name)' (malformed signature or payload)")
        }
    }

    /// The checks after the signature: audience, times, subject, nonce.
    private func identity(_ parsed: UnverifiedToken, provider: IdentityProvider, issuer: String, nonce: String?, now: Date) throws(IdentityError) -> VerifiedIdentity {
        // The signature covers the claims read below.
        let audiences = parsed.audiences
        guard audiences.contains(where: provider.audiences.contains) else {
            let given = audiences.isEmpty ? "no audience" : "audience \(audiences.map(quoted).joined(separator: ", "))"
            throw .refused("the token's \(given) is not one provider '\(provider.name)' accepts")
        }
        guard let expires = parsed.date("exp") else { throw .refused("the token has no exp (expiry) claim") }
        if now.timeIntervalSince(expires) > Self.leeway {
            throw .refused("the token expired at \(Self.format(expires)) (exp), more than \(Int(Self.leeway)) s ago")
        }
        if let notBefore = parsed.date("nbf"), notBefore.timeIntervalSince(now) > Self.leeway {
            throw .refused("the token is not valid before \(Self.format(notBefore)) (nbf)")
        }
        guard let subject = parsed.string("sub"), !subject.isEmpty, subject.utf8.count <= 255,
              !subject.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .refused("the token has no sub (subject) claim of 1 to 255 bytes without control characters")
        }
        switch (parsed.claims["nonce"], nonce) {
        case (nil, nil):
            break
        case (nil, .some):
            throw .refused("the request sent a nonce but the token has no nonce claim")
        case (.some, nil):
            throw .refused("the token carries a nonce: send the raw nonce in the Canopy-Nonce header")
        case (let claimed?, let raw?):
            // The claim is SHA-256(raw nonce) in hex, as Sign in with Apple
            // and Firebase do it; never the raw value itself, which anyone
            // holding the token could read from it and send back.
            let hashed = Hex.encode(SHA256.hash(data: Data(raw.utf8)))
            guard (claimed as? String)?.lowercased() == hashed else { throw .refused("the token's nonce is not the SHA-256 of the nonce the request sent") }
        }
        return VerifiedIdentity(
            provider: provider.name, issuer: provider.issuer, subject: subject,
            name: Self.name(parsed),
            email: parsed.flag("email_verified") ? parsed.string("email") : nil,
            phone: parsed.flag("phone_number_verified") ? parsed.string("phone_number") : nil,
            expires: expires
        )
    }

    static func name(_ token: UnverifiedToken) -> String? {
        let full = token.string("name") ?? [token.string("given_name"), token.string("family_name")].compactMap { $0 }.joined(separator: " ")
        // PostgreSQL counts code points and stores no NUL: 255 scalars, no
        // control characters (a name is for people; a newline is not part of it).
        let scalars = full.unicodeScalars.filter { $0.properties.generalCategory != .control }.prefix(255)
        let trimmed = String(String.UnicodeScalarView(scalars)).trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : trimmed
    }

    static func format(_ date: Date) -> String {
        ISO8601DateFormatter().string(from: date)
    }
}

/// What jwt-kit decodes after checking the signature: nothing. The claims
/// are read from the same (now verified) bytes by ``UnverifiedToken``, so
/// each failed check gets its own message.
private struct SignedPayload: JWTPayload {
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

import Foundation
import JWTKit
import Logging

/// One provider's keys as verification needs them: a key set read from a
/// file or given as a secret never changes; a key set by URL is fetched,
/// cached, fetched again when a token names an unknown `kid` or the copy is
/// an hour old — never more than once a minute — and kept in use while the
/// provider cannot be reached.
actor ProviderKeys {
    /// The collection a verification uses: one key, so jwt-kit cannot fall
    /// back to another.
    struct Selected: Sendable {
        let algorithm: String
        let label: String
        let keys: JWTKeyCollection
        let kid: String?
    }

    /// Whether the set comes by URL (and so can be fetched again).
    var isFetched: Bool {
        if case .jwksURL = provider.keySource { return true }
        return false
    }

    static let maximumAge: Duration = .seconds(3600)

    let provider: IdentityProvider
    let fetcher: any KeySetFetching
    /// The least time between two fetches (a minute; shorter in tests).
    let refetchInterval: Duration
    let logger: Logger
    private var keySet: KeySet?
    private var fetchedAt: ContinuousClock.Instant?
    private var lastAttempt: ContinuousClock.Instant?
    private var lastFailure: String?
    private var inFlight: Task<Void, Never>?
    private var collections: [String: JWTKeyCollection] = [:]
    private let secret: JWTKeyCollection?

    init(provider: IdentityProvider, fetcher: any KeySetFetching, refetchInterval: Duration, logger: Logger) async {
        self.provider = provider
        self.fetcher = fetcher
        self.refetchInterval = refetchInterval
        self.logger = logger
        switch provider.keySource {
        case .jwksFile(_, let keys):
            keySet = keys
            collections = await Self.collections(for: keys)
            secret = nil
        case .hs256Secret(let bytes):
            let collection = JWTKeyCollection()
            await collection.add(hmac: HMACKey(from: bytes), digestAlgorithm: .sha256)
            secret = collection
        case .jwksURL:
            secret = nil
        }
    }

    /// The key for a token's `kid` and `alg`, or the refusal that says why
    /// there is none.
    func key(kid: String?, algorithm: String) async throws(IdentityError) -> Selected {
        if let secret {
            return Selected(algorithm: "HS256", label: "the shared secret", keys: secret, kid: nil)
        }
        var key = keySet?.key(for: kid)
        if case .jwksURL = provider.keySource, key == nil || isStale {
            await refresh()
            key = keySet?.key(for: kid)
        }
        guard let keySet else {
            throw .refused("the keys of provider '\(provider.name)' could not be fetched (\(lastFailure ?? "not yet fetched")); try again shortly")
        }
        guard let key else {
            if let kid { throw .refused("no key with kid \(quoted(kid)) in provider '\(provider.name)''s key set") }
            throw .refused("the token has no kid, and provider '\(provider.name)' has \(keySet.keys.count) keys")
        }
        let label = key.kid.map { "key \(quoted($0))" } ?? "the provider's key"
        guard key.algorithm == algorithm else {
            throw .refused("alg \(quoted(algorithm)) is not allowed for \(label) of provider '\(provider.name)', which is a \(key.algorithm) key")
        }
        guard let collection = collections[key.kid ?? ""] else {
            throw .refused("the keys of provider '\(provider.name)' are being replaced; try again")
        }
        return Selected(algorithm: key.algorithm, label: label, keys: collection, kid: key.kid)
    }

    /// Fetches the key set now, unless a fetch ran less than a minute ago.
    /// A failure keeps the keys already held.
    func refresh() async {
        if let inFlight {
            await inFlight.value
            return
        }
        guard case .jwksURL(let url) = provider.keySource else { return }
        if let lastAttempt, ContinuousClock.now - lastAttempt < refetchInterval { return }
        lastAttempt = .now
        let task = Task { await self.fetch(url) }
        inFlight = task
        await task.value
        inFlight = nil
    }

    private var isStale: Bool {
        fetchedAt.map { ContinuousClock.now - $0 > Self.maximumAge } ?? true
    }

    private func fetch(_ url: String) async {
        do {
            let data = try await fetcher.fetch(url)
            let fetched = try KeySet(parsing: data)
            let built = await Self.collections(for: fetched)
            // The set and its collections change together, with no
            // suspension between: a verification never pairs a kid with a
            // key of the set before.
            keySet = fetched
            collections = built
            fetchedAt = .now
            lastFailure = nil
            logger.info("fetched the key set of an identity provider", metadata: [
                "canopy.provider": "\(provider.name)", "canopy.keys": "\(fetched.keys.map { $0.kid ?? "-" })",
            ])
            for note in fetched.skipped {
                logger.notice("skipped a key of an identity provider", metadata: ["canopy.provider": "\(provider.name)", "canopy.reason": "\(note)"])
            }
        } catch {
            let reason = (error as? IdentityError)?.message ?? String(describing: error)
            lastFailure = reason
            logger.warning("could not fetch the key set of an identity provider; keeping the keys held", metadata: [
                "canopy.provider": "\(provider.name)", "canopy.url": "\(url)", "canopy.error": "\(reason)",
                "canopy.keys_held": "\(keySet?.keys.count ?? 0)",
            ])
        }
    }

    /// One jwt-kit collection per key, each holding that key alone, built
    /// before the set is put in use.
    private static func collections(for keySet: KeySet) async -> [String: JWTKeyCollection] {
        var built: [String: JWTKeyCollection] = [:]
        for key in keySet.keys {
            let collection = JWTKeyCollection()
            // The JWK was checked when the set was read; adding cannot fail.
            _ = try? await collection.add(jwk: key.jwk, isDefault: true)
            built[key.kid ?? ""] = collection
        }
        return built
    }
}

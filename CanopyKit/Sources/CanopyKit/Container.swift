import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The way into one Canopy server (CKContainer): its base URL and how to
/// get a bearer token; it hands out the private and shared databases and
/// does what is not per database: who am I, share links, accepting.
public final class Container: Sendable {
    public let baseURL: URL
    /// Where fetched assets are kept, named by their SHA-256.
    public let assetCacheDirectory: URL
    let transport: GraphQLTransport

    /// - Parameters:
    ///   - baseURL: the gateway, e.g. `https://canopy.example.com`.
    ///   - tokenProvider: returns the bearer token; called again with `true` after a 401.
    public init(baseURL: URL, session: URLSession = .shared, assetCacheDirectory: URL? = nil,
                tokenProvider: @escaping TokenProvider) {
        self.baseURL = baseURL
        self.assetCacheDirectory = assetCacheDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("CanopyKit-assets", isDirectory: true)
        self.transport = GraphQLTransport(baseURL: baseURL, session: session, tokens: TokenCache(provider: tokenProvider))
    }

    /// A container that always sends one token (a Canopy token from `canopy users token`).
    public convenience init(baseURL: URL, token: String) {
        self.init(baseURL: baseURL) { _ in token }
    }

    /// A container that sends no token: only `publicCloudDatabase`'s reads
    /// work (what its record types grant to `_world`); anything else
    /// throws `.notAuthenticated`.
    public init(baseURL: URL, session: URLSession = .shared, assetCacheDirectory: URL? = nil) {
        self.baseURL = baseURL
        self.assetCacheDirectory = assetCacheDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("CanopyKit-assets", isDirectory: true)
        self.transport = GraphQLTransport(baseURL: baseURL, session: session, tokens: TokenCache(provider: nil))
    }

    /// The signed-in user's own zones (CKContainer.privateCloudDatabase).
    public var privateCloudDatabase: Database { Database(container: self, scope: .private) }
    /// Zones and records others shared with the user, once accepted (CKContainer.sharedCloudDatabase).
    public var sharedCloudDatabase: Database { Database(container: self, scope: .shared) }
    /// The app's public database (CKContainer.publicCloudDatabase): one
    /// zone, `RecordZone.ID.default`; each record type's grants decide who
    /// reads, creates and writes, and reads need no token where `_world`
    /// may READ. No zones of its own and no shares (`.badDatabase`).
    public var publicCloudDatabase: Database { Database(container: self, scope: .public) }

    /// The signed-in user (CKContainer.userRecordID / CKUserIdentity).
    public func currentUser() async throws -> UserIdentity {
        let data = try await transport.execute(Documents.me)
        guard let user = data["me"].flatMap(UserIdentity.init(json:)) else { throw CanopyError(.serverResponseLost, "no user in the answer") }
        return user
    }

    /// What the user stores and may store (`me { usage }`; docs/QUOTAS.md).
    /// Past the quota, saves and uploads fail with `.quotaExceeded`.
    public func storageUsage() async throws -> StorageUsage {
        let data = try await transport.execute(Documents.storageUsage)
        guard let usage = data["me"]?["usage"].flatMap(StorageUsage.init(json:)) else {
            throw CanopyError(.serverResponseLost, "no usage in the answer")
        }
        return usage
    }

    /// The user's `userRecordName` (CKContainer.userRecordID()).
    public func userRecordID() async throws -> String {
        try await currentUser().userRecordName
    }

    /// Finds a user by email or phone (CKContainer.userIdentity(forEmailAddress:)); nil when none.
    public func userIdentity(forEmailAddress email: String? = nil, phoneNumber: String? = nil) async throws -> UserIdentity? {
        var variables: [String: JSON] = [:]
        if let email { variables["email"] = .string(email) }
        if let phoneNumber { variables["phone"] = .string(phoneNumber) }
        let data = try await transport.execute(Documents.discoverUser, variables)
        return data["discoverUser"].flatMap(UserIdentity.init(json:))
    }

    /// What a share link opens, for showing before accepting (CKContainer.shareMetadata(for:)).
    /// With `shouldFetchRootRecord`, a hierarchy share's root record comes
    /// too, limited to `rootRecordDesiredKeys` (nil: every key), as
    /// CKFetchShareMetadataOperation's options of those names.
    public func shareMetadata(for url: URL, shouldFetchRootRecord: Bool = false, rootRecordDesiredKeys: [String]? = nil) async throws -> Share.Metadata {
        if shouldFetchRootRecord {
            let data = try await transport.execute(Documents.shareMetadataWithRoot, [
                "url": .string(url.absoluteString), "keys": rootRecordDesiredKeys.map { .array($0.map(JSON.string)) } ?? .null,
            ])
            return try Share.Metadata(json: data["shareMetadata"] ?? .null)
        }
        let data = try await transport.execute(Documents.shareMetadata, ["url": .string(url.absoluteString)])
        return try Share.Metadata(json: data["shareMetadata"] ?? .null)
    }

    /// Asks the owner of the share at `url` for access (CloudKit iOS 26's
    /// access requests): allowed when the share `allowsAccessRequests`;
    /// otherwise the same error as a link that leads nowhere.
    @discardableResult
    public func requestAccess(url: URL) async throws -> Share.Metadata {
        let data = try await transport.execute(Documents.requestShareAccess, ["url": .string(url.absoluteString)])
        return try Share.Metadata(json: data["requestShareAccess"] ?? .null)
    }

    /// Accepts a share (CKContainer.accept(_:)): its zone or records then
    /// appear in `sharedCloudDatabase`. Accepting twice changes nothing.
    @discardableResult
    public func accept(_ metadata: Share.Metadata) async throws -> Share.Metadata {
        try await accept(url: metadata.url)
    }

    /// Accepts a share by its URL, without fetching its metadata first.
    @discardableResult
    public func accept(url: URL) async throws -> Share.Metadata {
        let data = try await transport.execute(Documents.acceptShare, ["url": .string(url.absoluteString)])
        return try Share.Metadata(json: data["acceptShare"] ?? .null)
    }
}

/// A user as others see them (CKUserIdentity).
public struct UserIdentity: Sendable, Hashable {
    public let userRecordName: String
    public let name: String?
    public let email: String?
    public let phone: String?

    init?(json: JSON) {
        guard let name = json["userRecordName"]?.string else { return nil }
        self.userRecordName = name
        self.name = json["name"]?.string
        self.email = json["email"]?.string
        self.phone = json["phone"]?.string
    }
}

/// The bytes charged to the signed-in user, and their quota: records'
/// fields and assets in zones they own (a shared zone's records are its
/// owner's) and public records they created, plus uploads not attached yet.
public struct StorageUsage: Sendable, Hashable {
    public let storedBytes: Int64
    public let fieldBytes: Int64
    public let assetBytes: Int64
    public let pendingUploadBytes: Int64
    public let recordCount: Int64
    /// nil: no limit.
    public let quotaBytes: Int64?
    /// What the quota is checked against: stored bytes and pending uploads.
    public var usedBytes: Int64 { storedBytes + pendingUploadBytes }

    init?(json: JSON) {
        guard let stored = json["storedBytes"]?.double, let fields = json["fieldBytes"]?.double, let assets = json["assetBytes"]?.double,
              let pending = json["pendingUploadBytes"]?.double, let records = json["recordCount"]?.double else { return nil }
        storedBytes = Int64(stored)
        fieldBytes = Int64(fields)
        assetBytes = Int64(assets)
        pendingUploadBytes = Int64(pending)
        recordCount = Int64(records)
        quotaBytes = json["quotaBytes"]?.double.map { Int64($0) }
    }
}

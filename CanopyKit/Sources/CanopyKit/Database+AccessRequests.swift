import Foundation

/// Deciding access requests and reading a share's activity (docs/API.md §17):
/// the owner in the private database, an administrator in the shared one.
extension Database {
    /// Approves a pending request: the requester becomes a participant with
    /// `permission`, at once (they asked; there is nothing to accept).
    @discardableResult
    public func approveAccessRequest(from userRecordName: String, on share: Share, permission: Share.Permission = .readOnly) async throws -> Share {
        try await decide("approveAccessRequest", userRecordName, share, ["permission": .string(permission.rawValue)])
    }

    /// Denies a pending request; they may ask again.
    @discardableResult
    public func denyAccessRequest(from userRecordName: String, on share: Share) async throws -> Share {
        try await decide("denyAccessRequest", userRecordName, share, [:])
    }

    /// Blocks a requester (or a participant, who is removed): they cannot ask again until unblocked.
    @discardableResult
    public func blockRequester(_ userRecordName: String, on share: Share) async throws -> Share {
        try await decide("blockAccessRequest", userRecordName, share, [:])
    }

    /// Lets a blocked person ask again.
    @discardableResult
    public func unblockRequester(_ userRecordName: String, on share: Share) async throws -> Share {
        try await decide("unblockRequester", userRecordName, share, [:])
    }

    private func decide(_ field: String, _ userRecordName: String, _ share: Share, _ extra: [String: JSON]) async throws -> Share {
        var variables: [String: JSON] = [
            "zoneName": .string(share.recordZoneID.zoneName),
            "root": share.rootRecordID.map { .string($0.recordName) } ?? .null,
            "user": .string(userRecordName),
            "owner": databaseScope == .shared ? .string(share.recordZoneID.ownerName) : .null,
        ]
        variables.merge(extra) { $1 }
        let data = try await transport.execute(Documents.decideAccessRequest(field), variables)
        return try Share(json: data[field] ?? .null, scopeOwner: databaseScope == .private ? CurrentUserDefaultName : nil)
    }

    /// A page of the share's activity log, oldest first, and the cursor of
    /// the next page (nil: no more). The owner and administrators read every
    /// entry; other participants, those about themselves.
    public func activity(of share: Share, after cursor: String? = nil, limit: Int = 100) async throws -> (entries: [Share.Activity], cursor: String?) {
        try requireSharedOwner(share.recordZoneID)
        let data = try await transport.execute(Documents.shareActivity, [
            "scope": scopeJSON, "zone": share.recordZoneID.json,
            "root": share.rootRecordID.map { .string($0.recordName) } ?? .null,
            "after": cursor.map(JSON.string) ?? .null, "limit": .int(Int64(limit)),
        ])
        guard let page = data["share"]?["activity"] else {
            throw CanopyError(.unknownItem, "\(share.recordZoneID.zoneName) is not shared")
        }
        return ((page["entries"]?.array ?? []).map(Share.Activity.init(json:)), page["cursor"]?.string)
    }
}

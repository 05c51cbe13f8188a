import Foundation

/// Shares (docs/API.md §3): the owner saves and deletes them in the private
/// database; a participant reads them and leaves from the shared one.
extension Database {
    /// The share of a zone, or of a root record; nil when not shared.
    public func share(forZoneID zoneID: RecordZone.ID, rootRecordName: String? = nil) async throws -> Share? {
        try requireSharedOwner(zoneID)
        let data = try await transport.execute(Documents.share, [
            "scope": scopeJSON, "zone": zoneID.json, "root": rootRecordName.map(JSON.string) ?? .null,
        ])
        guard let json = data["share"], !json.isNull else { return nil }
        return try Share(json: json, scopeOwner: databaseScope == .private ? CurrentUserDefaultName : nil)
    }

    /// The share rooted at a record; nil when not shared.
    public func share(forRootRecordID recordID: Record.ID) async throws -> Share? {
        try await share(forZoneID: recordID.zoneID, rootRecordName: recordID.recordName)
    }

    /// Creates or updates a share (saving a CKShare): title, public
    /// permission, participants added or changed, and those removed with
    /// `removeParticipant`. Answers the share as saved, with its URL.
    @discardableResult
    public func save(_ share: Share) async throws -> Share {
        var variables: [String: JSON] = [
            "zoneName": .string(share.recordZoneID.zoneName),
            "root": share.rootRecordID.map { .string($0.recordName) } ?? .null,
            "public": .string(share.publicPermission.rawValue),
            "participants": .array(share.participants.filter { $0.role != .owner && $0.role != .publicUser }.map(\.input)),
        ]
        if let title = share.title { variables["title"] = .string(title) }
        variables["requests"] = .bool(share.allowsAccessRequests)
        variables["type"] = share.type.map(JSON.string) ?? .null
        variables["thumbnail"] = share.thumbnailImageData.map { .string($0.base64EncodedString()) } ?? .null
        if databaseScope == .shared {
            // An administrator changes participants of someone else's share, one by one.
            var latest: Share?
            for participant in share.participants where participant.role != .owner && participant.role != .publicUser {
                latest = try await changeShare(Documents.setParticipant, "setParticipant", share, [
                    "participant": participant.input, "owner": .string(share.recordZoneID.ownerName)])
            }
            for participant in share.removedParticipants {
                latest = try await changeShare(Documents.removeParticipant, "removeParticipant", share, participant.removal
                    .merging(["owner": .string(share.recordZoneID.ownerName)]) { $1 })
            }
            return latest ?? share
        }
        let data = try await transport.execute(Documents.saveShare, variables)
        var saved = try Share(json: data["saveShare"] ?? .null, scopeOwner: CurrentUserDefaultName)
        for participant in share.removedParticipants {
            saved = try await changeShare(Documents.removeParticipant, "removeParticipant", share, participant.removal)
        }
        return saved
    }

    private func changeShare(_ document: String, _ field: String, _ share: Share, _ extra: [String: JSON]) async throws -> Share {
        var variables: [String: JSON] = [
            "zoneName": .string(share.recordZoneID.zoneName),
            "root": share.rootRecordID.map { .string($0.recordName) } ?? .null,
        ]
        variables.merge(extra) { $1 }
        let data = try await transport.execute(document, variables)
        return try Share(json: data[field] ?? .null, scopeOwner: databaseScope == .private ? CurrentUserDefaultName : nil)
    }

    /// Stops sharing (deleting the CKShare): every participant loses access at once.
    public func deleteShare(_ share: Share) async throws {
        _ = try await transport.execute(Documents.deleteShare, [
            "zoneName": .string(share.recordZoneID.zoneName),
            "root": share.rootRecordID.map { .string($0.recordName) } ?? .null,
        ])
    }

    /// Leaves a share someone else owns (a participant deleting the CKShare from the shared database).
    public func leave(_ share: Share) async throws {
        _ = try await transport.execute(Documents.leaveShare, [
            "zone": share.recordZoneID.json, "root": share.rootRecordID.map { .string($0.recordName) } ?? .null,
        ])
    }
}

extension Share.Participant {
    var input: JSON {
        var members: [String: JSON] = ["permission": .string(permission.rawValue), "role": .string(role.rawValue)]
        if let userRecordName { members["userRecordName"] = .string(userRecordName) }
        else if let email { members["email"] = .string(email) }
        else if let phone { members["phone"] = .string(phone) }
        return .object(members)
    }

    var removal: [String: JSON] {
        if let userRecordName { return ["user": .string(userRecordName)] }
        if let email { return ["email": .string(email)] }
        return ["phone": phone.map(JSON.string) ?? .null]
    }
}

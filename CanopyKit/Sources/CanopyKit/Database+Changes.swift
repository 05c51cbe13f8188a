import Foundation

/// Change feeds (docs/API.md §7): what changed since a token, never skipping a
/// commit. `moreComing` means: call again with the returned token.
extension Database {
    /// A zone that changed or went away in a database's feed (CKDatabase.DatabaseChange).
    public enum DatabaseChange: Sendable, Hashable {
        case modification(RecordZone.ID)
        /// Deleted, or (shared database) the share ended, the user was removed or left.
        case deletion(RecordZone.ID)
    }

    /// A record deleted since the token (CKDatabase.RecordZoneChange.Deletion).
    public struct RecordDeletion: Sendable, Hashable {
        public let recordID: Record.ID
        public let recordType: String
    }

    /// The zones whose records or share changed since `token` (CKDatabase.databaseChanges(since:resultsLimit:)).
    public func databaseChanges(since token: ServerChangeToken?, resultsLimit: Int = 200) async throws
        -> (modifications: [RecordZone.ID], deletions: [RecordZone.ID], changeToken: ServerChangeToken, moreComing: Bool) {
        let data = try await transport.execute(Documents.databaseChanges, [
            "scope": scopeJSON, "since": token.map { .string($0.value) } ?? .null, "limit": .int(Int64(resultsLimit)),
        ])
        return try databaseChanges(from: data["databaseChanges"])
    }

    func databaseChanges(from page: JSON?) throws
        -> (modifications: [RecordZone.ID], deletions: [RecordZone.ID], changeToken: ServerChangeToken, moreComing: Bool) {
        guard let page, let token = page["token"]?.string else { throw CanopyError(.serverResponseLost, "a feed page without its token") }
        return ((page["changedZones"]?.array ?? []).compactMap { zoneID(fromServer: $0) },
                (page["deletedZones"]?.array ?? []).compactMap { zoneID(fromServer: $0) },
                ServerChangeToken(token), page["moreComing"]?.bool ?? false)
    }

    /// The records of a zone changed or deleted since `token`; from nil, every
    /// record (CKDatabase.recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)).
    public func recordZoneChanges(inZoneWith zoneID: RecordZone.ID, since token: ServerChangeToken?,
                                  desiredKeys: [String]? = nil, resultsLimit: Int = 200) async throws
        -> (modifications: [Record], deletions: [RecordDeletion], changeToken: ServerChangeToken, moreComing: Bool) {
        try requireSharedOwner(zoneID)
        let data = try await transport.execute(Documents.zoneChanges, [
            "scope": scopeJSON, "zone": zoneID.json, "since": token.map { .string($0.value) } ?? .null,
            "limit": .int(Int64(resultsLimit)), "keys": desiredKeys.map { .array($0.map(JSON.string)) } ?? .null,
        ])
        return try await recordZoneChanges(from: data["zoneChanges"], zoneID: zoneID)
    }

    /// A first sync in parallel (Canopy's addition; docs/CHANGE_FEEDS.md,
    /// "A first sync in ranges"): the zone's feed position now, and its
    /// records cut into up to `count` (1-64) ranges. Read every range with
    /// ``recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)``
    /// until `moreComing` is false (at once, in any order), then follow the
    /// feed from `position`: whatever changed meanwhile arrives again there.
    public func recordZoneRanges(inZoneWith zoneID: RecordZone.ID, count: Int = 8) async throws
        -> (position: ServerChangeToken, ranges: [ServerChangeToken]) {
        try requireSharedOwner(zoneID)
        let data = try await transport.execute(Documents.zoneRanges, ["scope": scopeJSON, "zone": zoneID.json, "count": .int(Int64(count))])
        guard let answer = data["zoneRanges"], let position = answer["position"]?.string else {
            throw CanopyError(.serverResponseLost, "zoneRanges answered without a position")
        }
        return (ServerChangeToken(position), (answer["ranges"]?.array ?? []).compactMap { $0.string.map(ServerChangeToken.init) })
    }

    func recordZoneChanges(from page: JSON?, zoneID: RecordZone.ID) async throws
        -> (modifications: [Record], deletions: [RecordDeletion], changeToken: ServerChangeToken, moreComing: Bool) {
        guard let page, let token = page["token"]?.string else { throw CanopyError(.serverResponseLost, "a feed page without its token") }
        var records: [Record] = []
        for json in page["changed"]?.array ?? [] {
            let record = try Record(json: json, zoneID: zoneID)
            try await container.localizeAssets(of: record)
            records.append(record)
        }
        let deletions = (page["deleted"]?.array ?? []).compactMap { json -> RecordDeletion? in
            guard let name = json["recordName"]?.string else { return nil }
            return RecordDeletion(recordID: Record.ID(recordName: name, zoneID: zoneID), recordType: json["recordType"]?.string ?? "")
        }
        return (records, deletions, ServerChangeToken(token), page["moreComing"]?.bool ?? false)
    }
}

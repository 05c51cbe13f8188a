import CanopyEncoding
import CanopyWAL
import Crypto
import Foundation

/// Where a change feed stopped, handed to the client as an opaque string
/// sealed with the server's secret (ChaCha20-Poly1305): a client can only
/// give back a token this server issued, unedited (anything else is
/// INVALID_ARGUMENTS), and cannot read the ids and snapshot inside.
///
/// A zone token is a position in the zone's feed (see
/// docs/CHANGE_FEEDS.md for why "after this position" never skips); a
/// database token is a position of each owner's commit clock.
public enum ChangeToken: Sendable, Equatable {
    case zone(ZonePosition)
    case database(DatabasePosition)

    /// The `user` of a token issued to a caller without a token (the
    /// public database's feed). Id 0 is the public zone's reserved owner
    /// (migrations/0038), which nobody can act as: no account's.
    public static let anonymousUser: Int64 = 0

    /// A position in one zone's feed, for one user and scope.
    public struct ZonePosition: Codable, Sendable, Equatable {
        /// The user it was issued to.
        public var user: Int64
        public var scope: String
        /// The zone by id: a zone deleted and created again under the same
        /// name is another feed (the old token is expired).
        public var zoneID: Int64
        public var zoneName: String
        /// The change position of the last change delivered.
        public var after: Int64
        /// Set by the first page of a sync from `null` to the zone's highest
        /// position (`canopy.zone_feed_position`): deletions at or below it
        /// happened before the sync began and are not reported.
        public var floor: Int64
        /// The WAL position the page was read at (``readPosition``).
        public var read: UInt64?
        /// A range of a first sync (`zoneRanges`): the last position the
        /// range holds. Its pages report only records changed after `after`
        /// and at or before `until`, and the range's last page answers the
        /// position token (`after = floor`, no `until`). Nil in a feed token.
        public var until: Int64?

        enum CodingKeys: String, CodingKey {
            case user = "u", scope = "s", zoneID = "z", zoneName = "n", after = "a", floor = "f", read = "l", until = "b"
        }

        public init(user: Int64, scope: String, zoneID: Int64, zoneName: String, after: Int64, floor: Int64, read: UInt64? = nil,
                    until: Int64? = nil) {
            self.user = user
            self.scope = scope
            self.zoneID = zoneID
            self.zoneName = zoneName
            self.after = after
            self.floor = floor
            self.read = read
            self.until = until
        }
    }

    /// Positions of the owners' clocks over the caller's zones in one
    /// scope (DECISIONS 149, 173): the next pass reports each owner's zones
    /// and departures numbered past the owner's position here.
    public struct DatabasePosition: Codable, Sendable, Equatable {
        public var user: Int64
        public var scope: String
        /// Each owner's clock (`canopy.owner_clocks`) where the last complete
        /// pass ended, as `[owner, position]` pairs; nil for the first pass
        /// (from `null`), which lists every zone and no deletions.
        public var since: [[Int64]]?
        /// When `since` was read (ms since the epoch, the database's clock),
        /// to tell whether departures it needs were purged.
        public var sinceTime: Int64
        /// Within a pass of several pages: the key of the last event sent
        /// (owner, position, kind, row id) and the clocks the pass ends at.
        public var after: [Int64]?
        public var next: [[Int64]]?
        public var nextTime: Int64?
        /// The WAL position the page was read at (``readPosition``).
        public var read: UInt64?
        /// A token from before the clocks (migrations/0047) held
        /// PostgreSQL snapshots here (where its pass began, where it ends):
        /// such a token is expired.
        var snapshot: String?
        var snapshotNext: String?

        enum CodingKeys: String, CodingKey {
            case user = "u", scope = "s", since = "k", sinceTime = "t", after = "a", next = "n", nextTime = "v", read = "l", snapshot = "x", snapshotNext = "w"
        }

        public init(user: Int64, scope: String, since: [[Int64]]?, sinceTime: Int64, after: [Int64]? = nil, next: [[Int64]]? = nil,
                    nextTime: Int64? = nil, read: UInt64? = nil) {
            self.user = user
            self.scope = scope
            self.since = since
            self.sinceTime = sinceTime
            self.after = after
            self.next = next
            self.nextTime = nextTime
            self.read = read
        }

        /// Whether it was issued before the clocks (a snapshot token).
        public var isFromBeforeClocks: Bool { snapshot != nil || snapshotNext != nil }
    }

    /// Where the page that issued this token was read, in the write-ahead
    /// log: the next page is read only from a server that has replayed this
    /// far (a replica behind it would show less than the client has seen;
    /// docs/DEPLOYMENT.md). Nil in tokens from before replicas.
    public var readPosition: WALPosition? {
        switch self {
        case .zone(let position): return position.read.map(WALPosition.init)
        case .database(let position): return position.read.map(WALPosition.init)
        }
    }

    private struct Envelope: Codable {
        var zone: ZonePosition?
        var database: DatabasePosition?
        enum CodingKeys: String, CodingKey { case zone = "z", database = "d" }
    }

    public func encoded(secret: SigningKey) -> String {
        let envelope: Envelope
        switch self {
        case .zone(let position): envelope = Envelope(zone: position)
        case .database(let position): envelope = Envelope(database: position)
        }
        let json = (try? JSONEncoder().encode(envelope)) ?? Data()
        let sealed = (try? ChaChaPoly.seal(json, using: secret.symmetricKey).combined) ?? Data()
        return "ct2.\(Base64URL.encode(sealed))"
    }

    /// Decodes and verifies; nil for anything this server did not issue.
    public static func decode(_ text: String, secret: SigningKey) -> ChangeToken? {
        guard let box = sealedBox(text), let json = secret.verifyingKeys.lazy.compactMap({ try? ChaChaPoly.open(box, using: $0) }).first,
              let envelope = try? JSONDecoder().decode(Envelope.self, from: json)
        else { return nil }
        if let zone = envelope.zone { return .zone(zone) }
        if let database = envelope.database { return .database(database) }
        return nil
    }

    /// Whether `text` was sealed with one of `secret`'s retired keys: a
    /// token this server issued before its database was restored from a
    /// backup, whose positions and snapshots may name changes the restored
    /// database never had (docs/BACKUP.md).
    public static func wasRetired(_ text: String, secret: SigningKey) -> Bool {
        guard !secret.retired.isEmpty, let box = sealedBox(text) else { return false }
        return secret.retired.contains { (try? ChaChaPoly.open(box, using: SymmetricKey(data: $0))) != nil }
    }

    private static func sealedBox(_ text: String) -> ChaChaPoly.SealedBox? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "ct2", let sealed = Base64URL.decode(parts[1]) else { return nil }
        return try? ChaChaPoly.SealedBox(combined: sealed)
    }
}

extension ChangeToken {
    /// The answer to a token from before a restore (``wasRetired(_:secret:)``).
    static func restoredSince(_ arguments: Arguments) -> QueryError {
        QueryError(.changeTokenExpired, "since is a change token from before the database was restored from a backup; fetch changes from null",
                   locations: arguments.location("since"))
    }
}

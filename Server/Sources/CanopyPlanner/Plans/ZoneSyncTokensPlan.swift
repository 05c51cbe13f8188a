import CanopyWAL
import PostgresNIO

/// The caller's zones of a scope with each one's sync token, for CloudKit
/// Web Services' `zones/list` and `zones/lookup` ("fetches all the zones
/// and their sync tokens"). A zone's token is a position at the head of its
/// feed now, as a page of `zoneChanges` that reached the end would end at:
/// `changes/zone` from it reports what changes after this read.
/// One statement; a typed input, not a GraphQL field. The zone ID
/// dictionaries are written by the statement; the tokens are sealed here,
/// with the gateway's key, which the database never holds.
public struct ZoneSyncTokensPlan: Sendable {
    public let statement: SQLStatement
    let scope: DatabaseScope
    let userID: Int64

    /// One zone and where its feed stands.
    public struct Zone: Sendable {
        public var name: String
        /// nil in the public database, whose zone has no owner.
        public var ownerName: String?
        /// The reference's zone ID dictionary, JSON text written by the
        /// statement (the public zone's owner is `__defaultOwner__`).
        public var zoneID: String
        /// The zone's sync token.
        public var syncToken: String
    }

    /// A row of the statement.
    public struct Row: Sendable {
        let id: Int64
        let name: String
        let ownerName: String?
        let zoneID: String
        let position: Int64?
        let read: String?
    }

    /// - Parameter userID: the caller (``ChangeToken/anonymousUser`` for
    ///   nobody), whom the tokens are issued to.
    public init(scope: DatabaseScope, userID: Int64) {
        self.scope = scope
        self.userID = userID
        var builder = SQLBuilder()
        let (filter, order): (SQL, SQL) = switch scope {
        case .private: ("z.owner_id = \(builder.caller())", "z.name")
        case .shared: ("z.owner_id <> \(builder.caller()) AND z.owner_id <> 0", "u.record_name, z.name")
        case .public: ("z.owner_id = 0", "z.name")
        }
        let owner: SQL = scope == .public ? "\(builder.bind(DatabaseScope.publicOwnerName))::text" : "u.record_name"
        let zoneID = Projection.cloudKitZoneID(name: "z.name", owner: owner)
        builder.append("""
            SELECT z.id, z.name, u.record_name, \(zoneID)::text, canopy.zone_feed_position(z.id, z.owner_id), canopy.read_position() \
            FROM canopy.zones z LEFT JOIN canopy.users u ON u.id = z.owner_id AND z.owner_id <> 0 WHERE \(filter) ORDER BY \(order)
            """)
        statement = builder.query
    }

    public static func decode(_ row: PostgresRow) throws -> Row {
        let (id, name, owner, zoneID, position, read) = try row.decode((Int64, String, String?, String, Int64?, String?).self)
        return Row(id: id, name: name, ownerName: owner, zoneID: zoneID, position: position, read: read)
    }

    /// The zones with their tokens, sealed with `secret`.
    public func zones(_ rows: [Row], secret: SigningKey) -> [Zone] {
        rows.map { row in
            let head = row.position ?? 0
            let token = ChangeToken.ZonePosition(
                user: userID, scope: scope.rawValue, zoneID: row.id, zoneName: row.name, after: head, floor: head,
                read: row.read.flatMap(WALPosition.init)?.value
            )
            return Zone(name: row.name, ownerName: scope == .public ? nil : row.ownerName, zoneID: row.zoneID,
                        syncToken: ChangeToken.zone(token).encoded(secret: secret))
        }
    }
}

import CanopyWAL
import PostgresNIO

/// The caller's zones of a scope with each one's sync token, for CloudKit
/// Web Services' `zones/list` and `zones/lookup` ("fetches all the zones
/// and their sync tokens"). A zone's token is a position at the head of its
/// feed now, as a page of `zoneChanges` that reached the end would end at:
/// `changes/zone` from it reports what changes after this read.
/// One statement; a typed input, not a GraphQL field.
public struct ZoneSyncTokensPlan: Sendable {
    public let statement: SQLStatement
    let scope: DatabaseScope
    let userID: Int64

    /// One zone and where its feed stands.
    public struct Zone: Sendable {
        public var name: String
        /// nil in the public database, whose zone has no owner.
        public var ownerName: String?
        /// The zone's sync token.
        public var syncToken: String
    }

    /// - Parameter userID: the caller (``ChangeToken/anonymousUser`` for
    ///   nobody), whom the tokens are issued to.
    public init(scope: DatabaseScope, userID: Int64) {
        self.scope = scope
        self.userID = userID
        let (filter, order): (SQL, SQL) = switch scope {
        case .private: ("z.owner_id = canopy.current_user_id()", "z.name")
        case .shared: ("z.owner_id <> canopy.current_user_id()", "u.record_name, z.name")
        case .public: ("z.owner_id IS NULL", "z.name")
        }
        var builder = SQLBuilder()
        builder.append("""
            SELECT z.id, z.name, u.record_name, canopy.zone_feed_position(z.id), canopy.read_position() \
            FROM canopy.zones z LEFT JOIN canopy.users u ON u.id = z.owner_id WHERE \(filter) ORDER BY \(order)
            """)
        statement = builder.query
    }

    public static func decode(_ row: PostgresRow) throws -> (Int64, String, String?, Int64?, String?) {
        try row.decode((Int64, String, String?, Int64?, String?).self)
    }

    /// The zones with their tokens, sealed with `secret`.
    public func zones(_ rows: [(Int64, String, String?, Int64?, String?)], secret: SigningKey) -> [Zone] {
        rows.map { id, name, owner, position, read in
            let head = position ?? 0
            let token = ChangeToken.ZonePosition(
                user: userID, scope: scope.rawValue, zoneID: id, zoneName: name, after: head, floor: head,
                read: read.flatMap(WALPosition.init)?.value
            )
            return Zone(name: name, ownerName: scope == .public ? nil : owner, syncToken: ChangeToken.zone(token).encoded(secret: secret))
        }
    }
}

import CanopyEncoding
import CanopyWAL
import PostgresNIO

/// `zoneChanges(scope, zone, since, limit)`: one page of a zone's change
/// feed in one statement. Live records and tombstones are read in change
/// position order through the (zone_id, change_seq) indexes, so a page
/// costs about `limit` rows whatever the zone's size; row-level security
/// decides what the caller sees of either.
///
/// A page ends at the `limit`-th event's position; a record that changed
/// several times within it appears once, as its newest event (a record that
/// is live wins over a tombstone at the same position, the mark of a record
/// moving between shares). The new token is the page's last position.
public struct ZoneChangesPlan: Sendable {
    public static let maximumLimit = 400

    public let statement: SQLStatement
    /// GraphQL's selection under `ZoneChanges`; nil for a CloudKit rendering.
    let field: SelectedField?
    let scope: DatabaseScope
    let zoneName: String
    let userID: Int64
    let since: ChangeToken.ZonePosition?
    let limit: Int

    /// What the statement returns: the zone and the page.
    public struct Page: Sendable {
        public var zoneID: Int64?
        public var purgedThrough: Int64
        public var departedAt: Int64?
        public var floor: Int64
        public var changed: String?
        public var deleted: String?
        public var lastPosition: Int64?
        public var moreComing: Bool
        /// Where the server that answered stands (`canopy.read_position()`).
        public var readPosition: WALPosition?
        public var isEmpty: Bool { (changed ?? "[]") == "[]" && (deleted ?? "[]") == "[]" }

        /// Decodes the statement's row (its SELECT list is `init`'s).
        public static func decode(_ row: PostgresRow) throws -> Page {
            let (zoneID, purged, departed, floor, changed, deleted, last, more, position) =
                try row.decode((Int64?, Int64?, Int64?, Int64?, String?, String?, Int64?, Bool?, String?).self)
            var page = Page((zoneID, purged, departed, floor, changed, deleted, last, more))
            page.readPosition = position.flatMap(WALPosition.init)
            return page
        }

        init(_ row: (Int64?, Int64?, Int64?, Int64?, String?, String?, Int64?, Bool?)) {
            zoneID = row.0
            purgedThrough = row.1 ?? 0
            departedAt = row.2
            floor = row.3 ?? 0
            changed = row.4
            deleted = row.5
            lastPosition = row.6
            moreComing = row.7 ?? false
        }
    }

    /// - Parameter overridingSince: for a subscription following the feed,
    ///   the token to continue from instead of the field's `since` argument.
    public init(_ field: SelectedField, request: ParsedRequest, userID: Int64, secret: SigningKey, overridingSince: String?? = .none) throws {
        let arguments = request.arguments(of: field)
        let scope = try DatabaseScope.read(arguments, publicRefusal: nil)
        let zone = try ZoneReference(scope: scope, in: arguments)
        let limit = try arguments.limit(default: 200, maximum: Self.maximumLimit)
        try self.init(
            zone: zone, since: try overridingSince ?? arguments.string("since"), limit: limit, userID: userID, secret: secret,
            field: field, request: request, style: nil, recordTypes: nil, sinceLocations: arguments.location("since"),
            acceptsRanges: field.name == "zoneChanges"   // not a zoneChanged subscription
        )
    }

    /// Web Services' `changes/zone` and `records/changes`: one page of the
    /// zone's feed after `since` (a sync token), its records written as
    /// CloudKit's dictionaries (``cloudKitPage(_:secret:)``); with
    /// `recordTypes`, only records of those types are answered (the page's
    /// positions still count every change).
    public init(
        zone: ZoneReference, since: String?, limit: Int, userID: Int64, secret: SigningKey, style: CloudKitRecordStyle,
        recordTypes: [String]?
    ) throws {
        guard (1...Self.maximumLimit).contains(limit) else {
            throw QueryError(.limitExceeded, "resultsLimit must be 1-\(Self.maximumLimit), not \(limit)")
        }
        try self.init(zone: zone, since: since, limit: limit, userID: userID, secret: secret, field: nil, request: nil,
                      style: style, recordTypes: recordTypes, sinceLocations: [])
    }

    init(
        zone: ZoneReference, since sinceText: String?, limit: Int, userID: Int64, secret: SigningKey, field: SelectedField?,
        request: ParsedRequest?, style: CloudKitRecordStyle?, recordTypes: [String]?, sinceLocations: [QueryError.Location],
        acceptsRanges: Bool = false
    ) throws {
        let scope = zone.scope
        var since: ChangeToken.ZonePosition?
        if let text = sinceText {
            guard case .zone(let position)? = ChangeToken.decode(text, secret: secret) else {
                if ChangeToken.wasRetired(text, secret: secret) {
                    throw QueryError(.changeTokenExpired, "since is a change token from before the database was restored from a backup; fetch changes from null",
                                     locations: sinceLocations)
                }
                throw QueryError(.invalidArguments, "since is not a zone change token this server issued", locations: sinceLocations)
            }
            guard position.user == userID, position.scope == scope.rawValue, position.zoneName == zone.zoneName else {
                throw QueryError(.invalidArguments, "since is a change token for another feed (user, scope or zone)", locations: sinceLocations)
            }
            if position.until != nil, !acceptsRanges {
                throw QueryError(.invalidArguments, "since is a range token of zoneRanges; read a range with the zoneChanges query, then follow the zoneRanges position",
                                 locations: sinceLocations)
            }
            since = position
        }
        self.field = field
        self.scope = scope
        self.zoneName = zone.zoneName
        self.userID = userID
        self.since = since
        self.limit = limit

        var builder = SQLBuilder()
        let cte = zone.cte(&builder)
        let after = builder.bind(since?.after ?? 0)
        let floor = builder.bind(since?.floor)
        let limitBind = builder.bind(limit)
        // Each zone-scoped table given the zone's owner where it is known (ZoneReference.ownerTest).
        func owned(_ column: SQL) -> SQL { zone.ownerTest(column, &builder) }
        // A range of a first sync (zoneRanges) stops at its upper bound.
        let liveUntil: SQL = since?.until.map { " AND r.change_seq <= \(builder.bind($0))::int8" } ?? ""
        let deadUntil: SQL = since?.until.map { " AND t.change_seq <= \(builder.bind($0))::int8" } ?? ""
        // Only a participant of record-rooted shares is told of records that
        // left them; the owner and zone-wide participants still see those records.
        let leftShares: SQL = scope == .private
            ? "false"
            : """
                NOT EXISTS (SELECT 1 FROM canopy.memberships m WHERE m.user_id = \(builder.caller()) \
                AND m.zone_id = (SELECT id FROM zone)\(owned("m.owner_id")) AND m.root_record_id IS NULL)
                """
        // What the caller may see changed other than through records: in
        // the public zone, grants or role members (for everyone, see
        // sql/triggers/public_access.sql); elsewhere, the caller's departures.
        let departures: SQL = scope == .public
            ? "(SELECT nullif(z.access_changed_seq, 0) FROM canopy.zones z WHERE z.id = (SELECT id FROM zone)\(owned("z.owner_id")))"
            : """
                (SELECT max(d.change_seq) FROM canopy.zone_departures d WHERE d.zone_id = (SELECT id FROM zone)\(owned("d.owner_id")) \
                AND d.user_id = \(builder.caller()))
                """
        let changedList: SQL
        let deletedList: SQL
        if var style {
            style.zone = zone
            let only: SQL = recordTypes.map { " AND r.record_type = ANY(\(builder.bind($0))::text[])" } ?? ""
            changedList = Projection.cloudKitRecordList(
                style, from: "FROM page p JOIN canopy.records r ON r.id = p.id\(owned("r.owner_id")) WHERE p.live\(only)", order: "p.position", &builder)
            let zoneID = builder.bind(json: style.zoneID)
            let tombstone: SQL = "json_build_object('recordName', t.record_name, 'recordType', t.record_type, 'deleted', true, 'zoneID', \(zoneID)::json)::text"
            let deadOnly: SQL = recordTypes.map { " AND t.record_type = ANY(\(builder.bind($0))::text[])" } ?? ""
            deletedList = """
                (SELECT '[' || coalesce(string_agg(\(tombstone), ',' ORDER BY p.position), '') || ']' \
                FROM page p JOIN canopy.tombstones t ON t.id = p.id\(owned("t.owner_id")) WHERE NOT p.live\(deadOnly))
                """
        } else {
            let changed = try field?.children.first { $0.name == "changed" }.map {
                try Projection.record($0.children, request: request!, zone: zone, &builder)
            } ?? "NULL::json"
            let deleted = try field?.children.first { $0.name == "deleted" }.map {
                try Projection.object($0.children, &builder) { part, _ in
                    switch part.name {
                    case "recordName": return "t.record_name"
                    case "recordType": return "t.record_type"
                    case "__typename": return "'Tombstone'"
                    default: throw QueryError(.badRequest, "Tombstone has no field \(part.name)")
                    }
                }
            } ?? "NULL::json"
            changedList = "(SELECT coalesce(json_agg(\(changed) ORDER BY p.position), '[]') FROM page p JOIN canopy.records r ON r.id = p.id\(owned("r.owner_id")) WHERE p.live)::text"
            deletedList = "(SELECT coalesce(json_agg(\(deleted) ORDER BY p.position), '[]') FROM page p JOIN canopy.tombstones t ON t.id = p.id\(owned("t.owner_id")) WHERE NOT p.live)::text"
        }
        builder.append("""
            WITH \(cte), \
            floor AS (SELECT coalesce(\(floor)::int8, canopy.zone_feed_position((SELECT id FROM zone), (SELECT owner_id FROM zone)), 0) AS position), \
            live AS (SELECT r.change_seq AS position, r.record_name AS name, true AS live, r.id FROM canopy.records r \
            WHERE r.zone_id = (SELECT id FROM zone)\(owned("r.owner_id")) AND r.change_seq > \(after)::int8\(liveUntil) ORDER BY r.change_seq LIMIT \(limitBind)::int8 + 1), \
            dead AS (SELECT t.change_seq, t.record_name, false, t.id FROM canopy.tombstones t \
            WHERE t.zone_id = (SELECT id FROM zone)\(owned("t.owner_id")) AND t.change_seq > greatest(\(after)::int8, (SELECT position FROM floor))\(deadUntil) \
            AND (t.kind = 'deleted' OR \(leftShares)) ORDER BY t.change_seq LIMIT \(limitBind)::int8 + 1), \
            events AS (SELECT * FROM live UNION ALL SELECT * FROM dead), \
            bound AS (SELECT position FROM events ORDER BY position OFFSET \(limitBind)::int8 - 1 LIMIT 1), \
            inside AS (SELECT * FROM events WHERE NOT EXISTS (SELECT 1 FROM bound) OR position <= (SELECT position FROM bound)), \
            page AS (SELECT DISTINCT ON (name) * FROM inside ORDER BY name, position DESC, live DESC) \
            SELECT (SELECT id FROM zone), \
            (SELECT z.tombstones_purged_through FROM canopy.zones z WHERE z.id = (SELECT id FROM zone)\(owned("z.owner_id"))), \
            \(departures), \
            (SELECT position FROM floor), \
            \(changedList), \
            \(deletedList), \
            (SELECT max(position) FROM inside), \
            EXISTS (SELECT 1 FROM events WHERE position > (SELECT position FROM bound)), \
            canopy.read_position()
            """)
        statement = builder.query
    }

    /// How far a server must have replayed to read the page after `since`.
    public var requiredPosition: WALPosition? { since?.read.map(WALPosition.init) }

    /// Web Services' page: the changed records then the deleted ones (one
    /// JSON list, as the reference gives them), the next sync token, and
    /// whether more follow.
    public func cloudKitPage(_ page: Page, secret: SigningKey) throws -> (records: String, syncToken: String, moreComing: Bool) {
        let token = try nextToken(page)
        let changed = page.changed ?? "[]", deleted = page.deleted ?? "[]"
        let records = deleted == "[]" ? changed : changed == "[]" ? deleted : String(changed.dropLast()) + "," + String(deleted.dropFirst())
        return (records, ChangeToken.zone(token).encoded(secret: secret), page.moreComing)
    }

    /// Checks the page against the token (expired?) and builds the
    /// `ZoneChanges` JSON with the next token.
    public func response(_ page: Page, secret: SigningKey) throws -> (json: String, token: ChangeToken.ZonePosition) {
        let token = try nextToken(page)
        guard let field else { throw QueryError(.internalError, "a CloudKit page has no GraphQL field") }
        let json = try field.jsonObject(typeName: "ZoneChanges") { child in
            switch child.name {
            case "changed": return page.changed ?? "[]"
            case "deleted": return page.deleted ?? "[]"
            case "token": return JSONValue.string(ChangeToken.zone(token).encoded(secret: secret)).jsonText
            case "moreComing": return "\(page.moreComing)"
            default: throw QueryError.noField(child, of: "ZoneChanges")
            }
        }
        return (json, token)
    }

    /// The position the page ends at, once the token it continues is
    /// checked against what the page found (expired, or another zone).
    func nextToken(_ page: Page) throws -> ChangeToken.ZonePosition {
        guard let zoneID = page.zoneID else {
            throw QueryError(.invalidArguments, "the zone does not exist")   // the caller reports ZONE_NOT_FOUND first
        }
        if let since {
            let reached = max(since.after, since.floor)
            if since.zoneID != zoneID {
                throw QueryError(.changeTokenExpired, "the zone was deleted and created again since this token; fetch its changes from null")
            }
            if reached < page.purgedThrough {
                throw QueryError(.changeTokenExpired, "this token is older than the change history kept; fetch the zone's changes from null")
            }
            if let departed = page.departedAt, departed > reached {
                throw QueryError(.changeTokenExpired, scope == .public
                    ? "the public database's grants or security roles changed since this token; fetch its changes from null"
                    : "you lost access to part of this zone since this token; fetch its changes from null")
            }
        }
        let read = since?.read.map(WALPosition.init).later(page.readPosition)?.value
        if let since, let until = since.until {
            // A range's last page hands over the position its ranges were
            // cut below: the feed to follow once every range is read.
            return page.moreComing
                ? ChangeToken.ZonePosition(user: userID, scope: scope.rawValue, zoneID: zoneID, zoneName: zoneName,
                                           after: page.lastPosition ?? since.after, floor: since.floor, read: read, until: until)
                : ChangeToken.ZonePosition(user: userID, scope: scope.rawValue, zoneID: zoneID, zoneName: zoneName,
                                           after: since.floor, floor: since.floor, read: read)
        }
        return ChangeToken.ZonePosition(
            user: userID, scope: scope.rawValue, zoneID: zoneID, zoneName: zoneName,
            after: page.lastPosition ?? since?.after ?? 0, floor: since?.floor ?? page.floor, read: read
        )
    }
}

import CanopyEncoding
import CanopyWAL
import PostgresNIO

/// `databaseChanges(scope, since, limit)`: the zones of a scope that
/// changed, appeared or went away since a token, in one statement.
///
/// Zones carry the id of the last transaction that changed them and
/// departures the id of theirs; the token is the snapshot the previous pass
/// began with, and a pass reports every zone and departure whose
/// transaction that snapshot did not see: each change once, none missed,
/// whatever order transactions commit in (docs/CHANGE_FEEDS.md).
///
/// A departure is reported deleted unless the very zone it left is visible
/// again (a participant removed and invited back): a zone deleted and made
/// again under the same name is in both lists, so a client drops what it
/// held of the old one and fetches the new one from the start (the fault
/// run found a device keeping records it had saved into the old one).
public struct DatabaseChangesPlan: Sendable {
    public static let maximumLimit = 400

    public let statement: SQLStatement
    /// GraphQL's selection under `DatabaseChanges`; nil for Web Services'
    /// typed input, whose zones are the reference's zone dictionaries.
    let field: SelectedField?
    let scope: DatabaseScope
    let userID: Int64
    let since: ChangeToken.DatabasePosition?
    let limit: Int

    /// What the statement returns.
    public struct Page: Sendable {
        public var changed: String?
        public var deleted: String?
        public var moreComing: Bool
        public var isEmpty: Bool { (changed ?? "[]") == "[]" && (deleted ?? "[]") == "[]" }
        public var lastKey: [UInt64]?
        /// The statement's snapshot and when it was taken (ms).
        public var snapshot: String
        public var snapshotTime: Int64
        /// Departures before this time (ms) were purged; nil: none.
        public var purgedBefore: Int64?
        /// Where the server that answered stands (`canopy.read_position()`).
        public var readPosition: WALPosition?

        /// Decodes the statement's row (its SELECT list is `init`'s).
        public static func decode(_ row: PostgresRow) throws -> Page {
            let (changed, deleted, more, xid, kind, id, snapshot, time, purged, position) =
                try row.decode((String?, String?, Bool, Int64?, Int64?, Int64?, String, Int64, Int64?, String?).self)
            var page = Page((changed, deleted, more, xid, kind, id, snapshot, time, purged))
            page.readPosition = position.flatMap(WALPosition.init)
            return page
        }

        init(_ row: (String?, String?, Bool, Int64?, Int64?, Int64?, String, Int64, Int64?)) {
            changed = row.0
            deleted = row.1
            moreComing = row.2
            if let xid = row.3, let kind = row.4, let id = row.5 {
                lastKey = [UInt64(xid), UInt64(kind), UInt64(id)]
            }
            snapshot = row.6
            snapshotTime = row.7
            purgedBefore = row.8
        }
    }

    /// - Parameter overridingSince: for a subscription following the feed,
    ///   the token to continue from instead of the field's `since` argument.
    public init(_ field: SelectedField, request: ParsedRequest, userID: Int64, secret: SigningKey, overridingSince: String?? = .none) throws {
        let arguments = request.arguments(of: field)
        let scope = try DatabaseScope.read(arguments, publicRefusal: DatabaseScope.notInPublic("it has no database change feed; follow zoneChanges of _defaultZone"))
        let limit = try arguments.limit(default: 200, maximum: Self.maximumLimit)
        try self.init(scope: scope, since: try overridingSince ?? arguments.string("since"), limit: limit, userID: userID, secret: secret,
                      field: field, request: request, sinceLocations: arguments.location("since"))
    }

    /// Web Services' `changes/database` and `zones/changes`: one page of
    /// the scope's zones changed since `since` (``cloudKitPage(_:secret:)``).
    public init(scope: DatabaseScope, since: String?, limit: Int, userID: Int64, secret: SigningKey) throws {
        if scope == .public { throw QueryError(.badDatabase, DatabaseScope.notInPublic("it has no database change feed; follow changes/zone of _defaultZone")) }
        guard (1...Self.maximumLimit).contains(limit) else {
            throw QueryError(.limitExceeded, "resultsLimit must be 1-\(Self.maximumLimit), not \(limit)")
        }
        try self.init(scope: scope, since: since, limit: limit, userID: userID, secret: secret, field: nil, request: nil, sinceLocations: [])
    }

    init(
        scope: DatabaseScope, since sinceText: String?, limit: Int, userID: Int64, secret: SigningKey, field: SelectedField?,
        request: ParsedRequest?, sinceLocations: [QueryError.Location]
    ) throws {
        var since: ChangeToken.DatabasePosition?
        if let text = sinceText {
            guard case .database(let position)? = ChangeToken.decode(text, secret: secret) else {
                if ChangeToken.wasRetired(text, secret: secret) {
                    throw QueryError(.changeTokenExpired, "since is a change token from before the database was restored from a backup; fetch changes from null",
                                     locations: sinceLocations)
                }
                throw QueryError(.invalidArguments, "since is not a database change token this server issued", locations: sinceLocations)
            }
            guard position.user == userID, position.scope == scope.rawValue else {
                throw QueryError(.invalidArguments, "since is a change token for another feed (user or scope)", locations: sinceLocations)
            }
            since = position
        }
        self.field = field
        self.scope = scope
        self.userID = userID
        self.since = since
        self.limit = limit

        var builder = SQLBuilder()
        let seen = builder.bind(since?.since)
        let scopeName = builder.bind(scope.rawValue)
        let afterXID = builder.bind(since?.after.map { Int64($0[0]) })
        let afterKind = builder.bind(since?.after.map { Int64($0[1]) })
        let afterID = builder.bind(since?.after.map { Int64($0[2]) })
        let limitBind = builder.bind(limit)
        let caller = builder.caller()
        let inScope: SQL = scope == .private
            ? "z.owner_id = \(caller)"
            : "z.owner_id <> \(caller) AND z.owner_id <> 0"
        let changedZones: SQL
        let deletedZones: SQL
        if let field, let request {
            changedZones = try field.children.first { $0.name == "changedZones" }.map {
                try Projection.zone($0.children, id: "c.id", name: "c.name", ownerName: "c.owner_name", request: request, &builder)
            } ?? "NULL::json"
            deletedZones = try field.children.first { $0.name == "deletedZones" }.map {
                try Projection.zone($0.children, id: "c.id", name: "c.name", ownerName: "c.owner_name", request: request, &builder)
            } ?? "NULL::json"
        } else {
            // Web Services: the reference's zone dictionaries, a deleted
            // zone's marked so.
            let zoneID = Projection.cloudKitZoneID(name: "c.name", owner: "c.owner_name")
            changedZones = "jsonb_build_object('zoneID', \(zoneID))"
            deletedZones = "jsonb_build_object('zoneID', \(zoneID), 'deleted', true)"
        }
        builder.append("""
            WITH seen AS (SELECT \(seen)::text::pg_snapshot AS snapshot), \
            events AS (\
            SELECT z.changed_xid AS xid, 0 AS kind, z.id AS row_id FROM canopy.zones z \
            WHERE \(inScope) AND ((SELECT snapshot FROM seen) IS NULL \
            OR (z.changed_xid >= pg_snapshot_xmin((SELECT snapshot FROM seen)) \
            AND NOT pg_visible_in_snapshot(z.changed_xid, (SELECT snapshot FROM seen)))) \
            UNION ALL \
            SELECT d.change_xid, 1, d.id FROM canopy.zone_departures d \
            WHERE d.user_id = \(caller) AND d.scope = \(scopeName)::text \
            AND d.change_xid >= pg_snapshot_xmin((SELECT snapshot FROM seen)) \
            AND NOT pg_visible_in_snapshot(d.change_xid, (SELECT snapshot FROM seen))), \
            page AS (SELECT e.*, row_number() OVER (ORDER BY e.xid, e.kind, e.row_id) AS ord FROM (\
            SELECT * FROM events WHERE \(afterXID)::int8 IS NULL \
            OR (xid, kind, row_id) > (((\(afterXID)::int8)::text)::xid8, \(afterKind)::int8, \(afterID)::int8) \
            ORDER BY xid, kind, row_id LIMIT \(limitBind)::int8 + 1) e), \
            changed AS (SELECT DISTINCT ON (z.id) z.id, z.name, u.record_name AS owner_name, p.ord FROM page p \
            LEFT JOIN canopy.zone_departures d ON p.kind = 1 AND d.id = p.row_id \
            JOIN canopy.zones z ON (p.kind = 0 AND z.id = p.row_id) \
            OR (p.kind = 1 AND z.owner_id = d.owner_id AND z.name = d.zone_name AND \(inScope)) \
            JOIN canopy.users u ON u.id = z.owner_id WHERE p.ord <= \(limitBind)::int8 ORDER BY z.id, p.ord), \
            deleted AS (SELECT DISTINCT ON (d.owner_id, d.zone_name) d.zone_id AS id, d.zone_name AS name, \
            d.owner_record_name AS owner_name, p.ord FROM page p JOIN canopy.zone_departures d ON p.kind = 1 AND d.id = p.row_id \
            WHERE p.ord <= \(limitBind)::int8 AND NOT EXISTS (SELECT 1 FROM canopy.zones z \
            WHERE z.id = d.zone_id AND \(inScope)) \
            ORDER BY d.owner_id, d.zone_name, p.ord) \
            SELECT (SELECT coalesce(json_agg(\(changedZones) ORDER BY c.ord), '[]') FROM changed c)::text, \
            (SELECT coalesce(json_agg(\(deletedZones) ORDER BY c.ord), '[]') FROM deleted c)::text, \
            (SELECT count(*) FROM page) > \(limitBind)::int8, \
            (SELECT p.xid::text::int8 FROM page p WHERE p.ord = \(limitBind)::int8), \
            (SELECT p.kind::int8 FROM page p WHERE p.ord = \(limitBind)::int8), \
            (SELECT p.row_id FROM page p WHERE p.ord = \(limitBind)::int8), \
            pg_current_snapshot()::text, (extract(epoch FROM clock_timestamp()) * 1000)::int8, \
            (SELECT (extract(epoch FROM f.departures_purged_before) * 1000)::int8 FROM canopy.feed_state f), \
            canopy.read_position()
            """)
        statement = builder.query
    }

    /// How far a server must have replayed to read the page after `since`.
    public var requiredPosition: WALPosition? { since?.read.map(WALPosition.init) }

    /// Checks the token against what was purged and builds the
    /// `DatabaseChanges` JSON with the next token.
    public func response(_ page: Page, secret: SigningKey) throws -> (json: String, token: String) {
        let token = try nextToken(page, secret: secret)
        guard let field else { throw QueryError(.internalError, "a typed page has no GraphQL field") }
        let json = try field.jsonObject(typeName: "DatabaseChanges") { child in
            switch child.name {
            case "changedZones": return page.changed ?? "[]"
            case "deletedZones": return page.deleted ?? "[]"
            case "token": return JSONValue.string(token).jsonText
            case "moreComing": return "\(page.moreComing)"
            default: throw QueryError.noField(child, of: "DatabaseChanges")
            }
        }
        return (json, token)
    }

    /// Web Services' page: the zones changed, then the zones deleted, as
    /// one JSON list of the reference's zone dictionaries written by the
    /// statement; the next sync token; and whether more follow.
    public func cloudKitPage(_ page: Page, secret: SigningKey) throws -> (zones: String, syncToken: String, moreComing: Bool) {
        let changed = page.changed ?? "[]", deleted = page.deleted ?? "[]"
        let zones = changed == "[]" ? deleted : deleted == "[]" ? changed : changed.dropLast() + "," + deleted.dropFirst()
        return (zones, try nextToken(page, secret: secret), page.moreComing)
    }

    /// The token the page ends at, once `since` is checked against what was purged.
    func nextToken(_ page: Page, secret: SigningKey) throws -> String {
        if let since, since.since != nil, let purgedBefore = page.purgedBefore, since.sinceTime < purgedBefore {
            throw QueryError(.changeTokenExpired, "this token is older than the change history kept; fetch database changes from null")
        }
        // A pass ends at the snapshot its first page was read under.
        let passEnd = since?.next ?? page.snapshot
        let passEndTime = since?.nextTime ?? page.snapshotTime
        let read = requiredPosition.later(page.readPosition)?.value
        let next: ChangeToken.DatabasePosition
        if page.moreComing, let lastKey = page.lastKey {
            next = .init(user: userID, scope: scope.rawValue, since: since?.since, sinceTime: since?.sinceTime ?? 0,
                         after: lastKey, next: passEnd, nextTime: passEndTime, read: read)
        } else {
            next = .init(user: userID, scope: scope.rawValue, since: passEnd, sinceTime: passEndTime, read: read)
        }
        return ChangeToken.database(next).encoded(secret: secret)
    }
}

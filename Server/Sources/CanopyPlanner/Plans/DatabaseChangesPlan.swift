import CanopyEncoding
import CanopyWAL
import PostgresNIO

/// `databaseChanges(scope, since, limit)`: the zones of a scope that
/// changed, appeared or went away since a token, in one statement.
///
/// Each owner has a clock that its zones' changes and departures take
/// positions of, in commit order (migrations/0047, DECISIONS 149 and 173);
/// a token holds, for each owner the caller sees, where the owner's clock
/// stood when the previous pass began, and a pass reports every zone and
/// departure numbered past it: each change once, none missed, on one
/// PostgreSQL and on Citus alike (docs/CHANGE_FEEDS.md).
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
        /// The last event of a full page: owner, position, kind, row id.
        public var lastKey: [Int64]?
        /// The clocks the pass ends at, as `[owner, position]` pairs, and
        /// when the statement read them (ms).
        public var ends: [[Int64]]
        public var endsTime: Int64
        /// Departures before this time (ms) were purged; nil: none.
        public var purgedBefore: Int64?
        /// Where the server that answered stands (`canopy.read_position()`).
        public var readPosition: WALPosition?

        /// Decodes the statement's row (its SELECT list is `init`'s).
        public static func decode(_ row: PostgresRow) throws -> Page {
            let (changed, deleted, more, owner, position, kind, id, endOwners, endPositions, time, purged, read) =
                try row.decode((String?, String?, Bool, Int64?, Int64?, Int64?, Int64?, [Int64], [Int64], Int64, Int64?, String?).self)
            var page = Page(changed: changed, deleted: deleted, moreComing: more, lastKey: nil,
                            ends: zip(endOwners, endPositions).map { [$0, $1] }, endsTime: time, purgedBefore: purged)
            if let owner, let position, let kind, let id { page.lastKey = [owner, position, kind, id] }
            page.readPosition = read.flatMap(WALPosition.init)
            return page
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
            if position.isFromBeforeClocks {
                throw QueryError(.changeTokenExpired, "since is a database change token from before this server's change clocks (migrations/0047); fetch changes from null",
                                 locations: sinceLocations)
            }
            guard position.after.map({ $0.count == 4 }) ?? true, (position.since ?? []).allSatisfy({ $0.count == 2 }),
                  (position.next ?? []).allSatisfy({ $0.count == 2 })
            else {
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
        // The owners the last pass saw and where their clocks stood; within
        // a pass, where the clocks stood when it began (its first page).
        let knownOwners = builder.bind(since?.since?.map { $0[0] })
        let knownPositions = builder.bind(since?.since?.map { $0[1] })
        let endOwners = builder.bind(since?.next?.map { $0[0] })
        let endPositions = builder.bind(since?.next?.map { $0[1] })
        let scopeName = builder.bind(scope.rawValue)
        let afterOwner = builder.bind(since?.after?[0])
        let afterPosition = builder.bind(since?.after?[1])
        let afterKind = builder.bind(since?.after?[2])
        let afterID = builder.bind(since?.after?[3])
        let limitBind = builder.bind(limit)
        let caller = builder.caller()
        let inScope: SQL = scope == .private
            ? "z.owner_id = \(caller)"
            : "z.owner_id <> \(caller) AND z.owner_id <> 0"
        let changedZones: SQL
        let deletedZones: SQL
        if let field, let request {
            changedZones = try field.children.first { $0.name == "changedZones" }.map {
                try Projection.zone($0.children, id: "c.id", owner: "c.owner_id", name: "c.name", ownerName: "c.owner_name", request: request, &builder)
            } ?? "NULL::json"
            deletedZones = try field.children.first { $0.name == "deletedZones" }.map {
                try Projection.zone($0.children, id: "c.id", owner: "c.owner_id", name: "c.name", ownerName: "c.owner_name", request: request, &builder)
            } ?? "NULL::json"
        } else {
            // Web Services: the reference's zone dictionaries, a deleted
            // zone's marked so.
            let zoneID = Projection.cloudKitZoneID(name: "c.name", owner: "c.owner_name")
            changedZones = "jsonb_build_object('zoneID', \(zoneID))"
            deletedZones = "jsonb_build_object('zoneID', \(zoneID), 'deleted', true)"
        }
        // `ends`: the clock of each owner whose zones the caller sees, read
        // now on a pass's first page (before the zones on Citus, where it
        // is a subplan of its own; in the same snapshot on one PostgreSQL),
        // or the first page's on the pass's later pages. An owner the
        // last pass saw and the caller no longer sees has no end: its
        // departures are reported up to now, and it is left out of the
        // next token. An owner new to the caller starts below 0, so its
        // zones from before the clocks (at 0) are in. `changed` is a union
        // of two joins, not one join on an OR: Citus 13.2.2's planner
        // crashed (SIGSEGV) on that join of the page with the zones.
        builder.append("""
            WITH known AS (SELECT k.owner_id, k.position FROM unnest(\(knownOwners)::int8[], \(knownPositions)::int8[]) AS k(owner_id, position)), \
            ends AS MATERIALIZED (\
            SELECT o.owner_id, coalesce(c.position, 0) AS position \
            FROM (SELECT DISTINCT z.owner_id FROM canopy.zones z WHERE \(inScope)) o \
            LEFT JOIN canopy.owner_clocks c ON c.owner_id = o.owner_id WHERE \(endOwners)::int8[] IS NULL \
            UNION ALL \
            SELECT n.owner_id, n.position FROM unnest(\(endOwners)::int8[], \(endPositions)::int8[]) AS n(owner_id, position)), \
            events AS (\
            SELECT z.owner_id, z.changed_position AS position, 0 AS kind, z.id AS row_id \
            FROM canopy.zones z JOIN ends e ON e.owner_id = z.owner_id LEFT JOIN known k ON k.owner_id = z.owner_id \
            WHERE \(inScope) AND z.changed_position > coalesce(k.position, -1) AND z.changed_position <= e.position \
            UNION ALL \
            SELECT d.owner_id, d.change_position, 1, d.id FROM canopy.zone_departures d \
            JOIN known k ON k.owner_id = d.owner_id LEFT JOIN ends e ON e.owner_id = d.owner_id \
            WHERE d.user_id = \(caller) AND d.scope = \(scopeName)::text AND d.change_position > k.position \
            AND (e.position IS NULL OR d.change_position <= e.position)), \
            page AS (SELECT e.*, row_number() OVER (ORDER BY e.owner_id, e.position, e.kind, e.row_id) AS ord FROM (\
            SELECT * FROM events WHERE \(afterOwner)::int8 IS NULL \
            OR (owner_id, position, kind, row_id) > (\(afterOwner)::int8, \(afterPosition)::int8, \(afterKind)::int8, \(afterID)::int8) \
            ORDER BY owner_id, position, kind, row_id LIMIT \(limitBind)::int8 + 1) e), \
            changed AS (SELECT DISTINCT ON (c.id) c.id, c.owner_id, c.name, u.record_name AS owner_name, c.ord FROM (\
            SELECT z.id, z.name, z.owner_id, p.ord FROM page p JOIN canopy.zones z ON z.owner_id = p.owner_id AND z.id = p.row_id \
            WHERE p.kind = 0 AND p.ord <= \(limitBind)::int8 \
            UNION ALL \
            SELECT z.id, z.name, z.owner_id, p.ord FROM page p \
            JOIN canopy.zone_departures d ON d.owner_id = p.owner_id AND d.id = p.row_id \
            JOIN canopy.zones z ON z.owner_id = d.owner_id AND z.name = d.zone_name \
            WHERE p.kind = 1 AND p.ord <= \(limitBind)::int8 AND \(inScope)) c \
            JOIN canopy.users u ON u.id = c.owner_id ORDER BY c.id, c.ord), \
            deleted AS (SELECT DISTINCT ON (d.owner_id, d.zone_name) d.zone_id AS id, d.owner_id, d.zone_name AS name, \
            d.owner_record_name AS owner_name, p.ord FROM page p JOIN canopy.zone_departures d ON p.kind = 1 \
            AND d.owner_id = p.owner_id AND d.id = p.row_id \
            WHERE p.ord <= \(limitBind)::int8 AND NOT EXISTS (SELECT 1 FROM canopy.zones z \
            WHERE z.owner_id = d.owner_id AND z.id = d.zone_id AND \(inScope)) \
            ORDER BY d.owner_id, d.zone_name, p.ord) \
            SELECT (SELECT coalesce(json_agg(\(changedZones) ORDER BY c.ord), '[]') FROM changed c)::text, \
            (SELECT coalesce(json_agg(\(deletedZones) ORDER BY c.ord), '[]') FROM deleted c)::text, \
            (SELECT count(*) FROM page) > \(limitBind)::int8, \
            (SELECT p.owner_id FROM page p WHERE p.ord = \(limitBind)::int8), \
            (SELECT p.position FROM page p WHERE p.ord = \(limitBind)::int8), \
            (SELECT p.kind::int8 FROM page p WHERE p.ord = \(limitBind)::int8), \
            (SELECT p.row_id FROM page p WHERE p.ord = \(limitBind)::int8), \
            (SELECT coalesce(array_agg(e.owner_id ORDER BY e.owner_id), '{}') FROM ends e), \
            (SELECT coalesce(array_agg(e.position ORDER BY e.owner_id), '{}') FROM ends e), \
            (extract(epoch FROM clock_timestamp()) * 1000)::int8, \
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
        // A pass ends at the clocks its first page read.
        let passEnd = since?.next ?? page.ends
        let passEndTime = since?.nextTime ?? page.endsTime
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

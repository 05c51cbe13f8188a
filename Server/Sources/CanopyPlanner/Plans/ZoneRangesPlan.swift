import CanopyWAL
import PostgresNIO

/// `zoneRanges(scope, zone, count)`: a first sync in parallel (issue 51;
/// docs/CHANGE_FEEDS.md, "A first sync in ranges"). One statement reads
/// the zone's feed position now and cuts the records at or below it into
/// ranges of nearly equal size by change position; each range is a sealed
/// zone token that `zoneChanges` reads like any feed, and whose last page
/// answers the position. A client reads every range (in any order, at
/// once), then follows the feed from the position: whatever changed while
/// the ranges were read has a position above it and arrives again there,
/// so the copy ends exact.
public struct ZoneRangesPlan: Sendable {
    /// The most ranges one request may ask for.
    public static let maximumCount = 64
    /// In the caller's own zone, a range holds at least this many records
    /// (a small zone is one range). A participant's and the public zone's
    /// answer exactly `count` ranges: their number says nothing of the size.
    public static let minimumPerPrivateRange = 100

    public let statement: SQLStatement
    let field: SelectedField
    let scope: DatabaseScope
    let zoneName: String
    let userID: Int64

    /// What the statement returns.
    public struct Cut: Sendable {
        public var zoneID: Int64?
        public var position: Int64
        public var cuts: [Int64]
        public var readPosition: WALPosition?

        public static func decode(_ row: PostgresRow) throws -> Cut {
            let (zoneID, position, cuts, read) = try row.decode((Int64?, Int64?, [Int64]?, String?).self)
            return Cut(zoneID: zoneID, position: position ?? 0, cuts: cuts ?? [], readPosition: read.flatMap(WALPosition.init))
        }
    }

    public init(_ field: SelectedField, request: ParsedRequest, userID: Int64) throws {
        let arguments = request.arguments(of: field)
        let scope = try DatabaseScope.read(arguments, publicRefusal: nil)
        let zone = try ZoneReference(scope: scope, in: arguments)
        let count = try arguments.int("count", default: 8)
        guard (1...Self.maximumCount).contains(count) else {
            throw arguments.invalid("count", "count must be 1-\(Self.maximumCount), not \(count)")
        }
        self.field = field
        self.scope = scope
        self.zoneName = zone.zoneName
        self.userID = userID

        var builder = SQLBuilder()
        let cte = zone.cte(&builder)
        let wantsRanges = field.children.contains { $0.name == "ranges" }
        let cuts: SQL = wantsRanges
            ? """
                canopy.zone_range_cuts((SELECT id FROM zone), (SELECT p FROM head), \(builder.bind(count))::int4, \
                \(builder.bind(scope == .private ? Self.minimumPerPrivateRange : 0))::int4, (SELECT owner_id FROM zone))
                """
            : "NULL::int8[]"
        // One statement, so one snapshot holds both the position and the
        // cuts (docs/CHANGE_FEEDS.md proves why that makes the result exact).
        builder.append("""
            WITH \(cte), head AS (SELECT coalesce(canopy.zone_feed_position((SELECT id FROM zone), (SELECT owner_id FROM zone)), 0) AS p) \
            SELECT (SELECT id FROM zone), (SELECT p FROM head), \(cuts), canopy.read_position()
            """)
        statement = builder.query
    }

    /// The `ZoneRanges` JSON: the position token and one token a range.
    public func response(_ cut: Cut, secret: SigningKey) throws -> String {
        guard let zoneID = cut.zoneID else { throw QueryError(.invalidArguments, "the zone does not exist") }
        let read = cut.readPosition?.value
        func token(after: Int64, until: Int64?) -> String {
            let position = ChangeToken.ZonePosition(user: userID, scope: scope.rawValue, zoneID: zoneID, zoneName: zoneName,
                                                    after: after, floor: cut.position, read: read, until: until)
            return JSONValue.string(ChangeToken.zone(position).encoded(secret: secret)).jsonText
        }
        return try field.jsonObject(typeName: "ZoneRanges") { child in
            switch child.name {
            case "position": return token(after: cut.position, until: nil)
            case "ranges":
                let bounds = [0] + cut.cuts.map { min($0, cut.position) } + [cut.position]
                return "[" + zip(bounds, bounds.dropFirst()).map { token(after: $0, until: $1) }.joined(separator: ",") + "]"
            default: throw QueryError.noField(child, of: "ZoneRanges")
            }
        }
    }
}

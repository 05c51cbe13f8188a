import PostgresNIO

/// `moveRecords(from, to, recordNames, withDescendants, parent)` (docs/API.md
/// §17): records change zone keeping their recordNames, through
/// `canopy.move_records`, which runs as the caller so row-level security
/// asks for write access on both sides. `locate` finds the two zones as the
/// caller sees them; `move` moves and answers the `MoveResult` JSON.
public struct MoveRecordsPlan: Sendable {
    /// Most records a request names (their descendants come along uncounted).
    public static let maximumRecordNames = 1000

    public let from: ZoneReference
    public let to: ZoneReference
    public let recordNames: [String]
    public let withDescendants: Bool
    public let parent: String?
    let field: SelectedField

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        self.field = field
        from = try ZoneReference(eitherScopeArgument: "from", in: arguments)
        to = try ZoneReference(eitherScopeArgument: "to", in: arguments)
        recordNames = try arguments.strings("recordNames")
        guard !recordNames.isEmpty else {
            throw arguments.invalid("recordNames", "name at least one record to move")
        }
        guard recordNames.count <= Self.maximumRecordNames else {
            throw QueryError(.limitExceeded, "moveRecords takes at most \(Self.maximumRecordNames) recordNames, got \(recordNames.count)",
                             locations: arguments.location("recordNames"))
        }
        if let bad = recordNames.first(where: { !Names.isRecordName($0) }) {
            throw arguments.invalid("recordNames", "recordName '\(bad.prefix(40))' must be 1-255 characters")
        }
        if Set(recordNames).count != recordNames.count {
            throw arguments.invalid("recordNames", "a record is named twice")
        }
        withDescendants = try arguments.bool("withDescendants", default: true)
        parent = try arguments.string("parent")
        if let parent, !Names.isRecordName(parent) {
            throw arguments.invalid("parent", "parent must be a recordName of 1-255 characters")
        }
    }

    /// One row: (source zone id, its owner, target zone id, its owner),
    /// each NULL when the caller has no such zone. The owners name the
    /// shards the move reads and writes on Citus (DECISIONS 171).
    public var locate: SQLStatement {
        var builder = SQLBuilder()
        let source = from.cte(named: "source", &builder), target = to.cte(named: "target", &builder)
        builder.append("""
            WITH \(source), \(target) SELECT (SELECT id FROM source), (SELECT owner_id FROM source), \
            (SELECT id FROM target), (SELECT owner_id FROM target)
            """)
        return builder.query
    }

    /// A zone `locate` found: its id and its owner's.
    public struct LocatedZone: Sendable, Equatable {
        public let id: Int64
        public let ownerID: Int64
    }

    public static func decodeLocated(_ row: PostgresRow) throws -> (from: LocatedZone?, to: LocatedZone?) {
        let (from, fromOwner, to, toOwner) = try row.decode((Int64?, Int64?, Int64?, Int64?).self)
        func zone(_ id: Int64?, _ owner: Int64?) -> LocatedZone? {
            guard let id, let owner else { return nil }
            return LocatedZone(id: id, ownerID: owner)
        }
        return (zone(from, fromOwner), zone(to, toOwner))
    }

    /// Moves; one row: the `MoveResult` JSON (moved names, or the refusals
    /// and nothing moved). `ran` makes the move happen whatever was selected.
    public func move(from source: LocatedZone, to target: LocatedZone) throws -> SQLStatement {
        var builder = SQLBuilder()
        builder.noteOwner(id: source.ownerID)
        builder.noteOwner(id: target.ownerID)
        let sourceOwner = builder.bind(source.ownerID), targetOwner = builder.bind(target.ownerID)
        let source = builder.bind(source.id), target = builder.bind(target.id)
        let names = builder.bind(recordNames), descendants = builder.bind(withDescendants), newParent = builder.bind(parent)
        let json = try Projection.object(field.children, &builder) { child, builder in
            switch child.name {
            case "moved":
                return "coalesce((SELECT json_agg(o.record_name ORDER BY o.record_name) FROM outcome o WHERE o.code IS NULL), '[]')"
            case "errors":
                let error = try Projection.object(child.children, &builder) { item, _ in
                    switch item.name {
                    case "recordName": return "o.record_name"
                    case "code": return "o.code"
                    case "message": return "o.message"
                    case "serverRecord": return "NULL::json"
                    case "__typename": return "'RecordError'"
                    default: throw QueryError(.badRequest, "RecordError has no field \(item.name)")
                    }
                }
                return "coalesce((SELECT json_agg(\(error) ORDER BY o.record_name) FROM outcome o WHERE o.code IS NOT NULL), '[]')"
            case "__typename": return "'MoveResult'"
            default: throw QueryError(.badRequest, "MoveResult has no field \(child.name)")
            }
        }
        // Called beside the source zone's row, so that on Citus the call
        // runs whole on the owner's shard, its locks and the records'
        // triggers in one backend (called on the coordinator, the triggers'
        // zone lock met the function's own: a distributed deadlock;
        // DECISIONS 171). On one PostgreSQL, one more lookup by key.
        builder.append("""
            WITH outcome AS MATERIALIZED (SELECT m.* FROM canopy.zones z CROSS JOIN LATERAL \
            canopy.move_records(\(source), \(target), \(names)::text[], \(descendants), \(newParent)::text, \(sourceOwner), \(targetOwner)) m \
            WHERE z.owner_id = \(sourceOwner) AND z.id = \(source)) \
            SELECT \(json)::text FROM (SELECT count(*) FROM outcome) ran
            """)
        return builder.query
    }
}

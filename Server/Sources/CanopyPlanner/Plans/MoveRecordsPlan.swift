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

    /// One row: (source zone id, target zone id), each NULL when the caller
    /// has no such zone.
    public var locate: SQLStatement {
        var builder = SQLBuilder()
        let source = from.cte(named: "source", &builder), target = to.cte(named: "target", &builder)
        builder.append("WITH \(source), \(target) SELECT (SELECT id FROM source), (SELECT id FROM target)")
        return builder.query
    }

    public static func decodeLocated(_ row: PostgresRow) throws -> (from: Int64?, to: Int64?) {
        let (from, to) = try row.decode((Int64?, Int64?).self)
        return (from, to)
    }

    /// Moves; one row: the `MoveResult` JSON (moved names, or the refusals
    /// and nothing moved). `ran` makes the move happen whatever was selected.
    public func move(fromID: Int64, toID: Int64) throws -> SQLStatement {
        var builder = SQLBuilder()
        let source = builder.bind(fromID), target = builder.bind(toID)
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
        builder.append("""
            WITH outcome AS MATERIALIZED (SELECT * FROM canopy.move_records(\(source), \(target), \(names)::text[], \(descendants), \(newParent)::text)) \
            SELECT \(json)::text FROM (SELECT count(*) FROM outcome) ran
            """)
        return builder.query
    }
}

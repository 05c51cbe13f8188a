import PostgresNIO

/// A root field's plan, shaped as PostgresNIO's `PostgresPreparedStatement`
/// pairs a statement with its `Row`: the SQL (built without I/O), the row
/// its SELECT list makes and how to decode it, and the field's JSON made
/// from that row. The gateway runs every such plan the same way, so the row
/// type lives beside the SELECT list that makes it, not in the gateway.
public protocol FieldPlan: Sendable {
    associatedtype Row: Sendable
    /// True when the statement writes: it runs in a transaction acting for
    /// the caller. A read runs on the pool in one round trip.
    static var writes: Bool { get }
    /// True when a streaming replica may answer (docs/API.md §13: `records`,
    /// `lookup` and the feeds); everything else reads the primary.
    static var readsReplicas: Bool { get }
    var statement: SQLStatement { get }
    /// Decodes the statement's row.
    static func decode(_ row: PostgresRow) throws -> Row
    /// The field's JSON text (nil for JSON null) from the statement's first
    /// row (nil: the statement returned none).
    func answer(_ row: Row?) throws -> String?
}

extension FieldPlan {
    public static var writes: Bool { false }
    public static var readsReplicas: Bool { false }
}

extension FieldPlan where Row == JSONRow {
    public static func decode(_ row: PostgresRow) throws -> JSONRow { try JSONRow.decode(row) }
}

extension FieldPlan where Row == ZoneJSONRow {
    public static func decode(_ row: PostgresRow) throws -> ZoneJSONRow { try ZoneJSONRow.decode(row) }
}

/// The row of a statement whose one column is the answer's JSON text.
public struct JSONRow: Sendable {
    public var json: String?

    public static func decode(_ row: PostgresRow) throws -> JSONRow {
        JSONRow(json: try row.decode(String?.self))
    }
}

/// The row of a read in a zone: whether the zone is there for the caller,
/// and the answer's JSON text.
public struct ZoneJSONRow: Sendable {
    public var zoneFound: Bool
    public var json: String?

    public static func decode(_ row: PostgresRow) throws -> ZoneJSONRow {
        let (found, json) = try row.decode((Bool, String?).self)
        return ZoneJSONRow(zoneFound: found, json: json)
    }
}

extension QueryError {
    /// A zone the caller may not see looks the same as one that does not exist.
    public static func zoneNotFound(at locations: [Location]) -> QueryError {
        QueryError(.zoneNotFound, "the zone does not exist", locations: locations)
    }

    /// A selected field the type does not have. Validation against the SDL
    /// stops these first; a field added to the SDL but not to the plan that
    /// answers it ends here instead of in a wrong answer.
    public static func noField(_ field: SelectedField, of typeName: String) -> QueryError {
        QueryError(.badRequest, "\(typeName) has no field \(field.name)")
    }

    /// The same answer for a share the caller may not open as for a URL
    /// that leads nowhere.
    public static func shareNotOpen(at locations: [Location]) -> QueryError {
        QueryError(.permissionFailure, "no share at this URL that you may open", locations: locations)
    }
}

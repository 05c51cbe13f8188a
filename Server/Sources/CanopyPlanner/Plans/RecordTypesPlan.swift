import PostgresNIO

/// `recordTypes`: the container's schema, every record type and its
/// fields' types (Canopy's addition, what CloudKit's dashboard shows). The
/// console needs it to offer record types and to edit a field by its type.
/// Read from `canopy.field_types`, which every user may read, as a
/// CloudKit container's schema is; the system fields that only carry index
/// declarations (`___createTime`, …) are left out.
public struct RecordTypesPlan: Sendable {
    public let statement: SQLStatement

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        var builder = SQLBuilder()
        let t = builder.alias("t"), f = builder.alias("f")
        let recordType = try Projection.object(field.children, &builder) { child, builder in
            switch child.name {
            case "name": return "\(t).record_type"
            case "__typename": return "'RecordType'"
            case "publicAccess":
                // The policies' rule (sql/policies/records.sql), for the
                // type rather than a record: CloudKit's defaults without grants.
                let type: SQL = "\(t).record_type"
                let granted: SQL = "\(type) = ANY ((SELECT canopy.granted_record_types())::text[])"
                let holds: (GrantDeclaration.Privilege, Bool) -> SQL = { privilege, creator in
                    "\(type) = ANY ((SELECT canopy.public_record_types(\(SQL.literal(privilege.rawValue)), \(SQL(unescaped: creator ? "true" : "false"))))::text[])"
                }
                let signedIn: SQL = "canopy.current_user_id() IS NOT NULL"
                return try Projection.object(child.children, &builder) { grandchild, _ in
                    switch grandchild.name {
                    case "read": return "(CASE WHEN \(granted) THEN \(holds(.read, false)) ELSE true END)"
                    case "create": return "(\(signedIn) AND CASE WHEN \(granted) THEN \(holds(.create, false)) OR \(holds(.create, true)) ELSE true END)"
                    case "write": return "(\(signedIn) AND \(granted) AND \(holds(.write, false)))"
                    case "writeOwn": return "(\(signedIn) AND CASE WHEN \(granted) THEN \(holds(.write, false)) OR \(holds(.write, true)) ELSE true END)"
                    case "__typename": return "'PublicAccess'"
                    default: throw QueryError.noField(grandchild, of: "PublicAccess")
                    }
                }
            case "fields":
                let recordField = try Projection.object(child.children, &builder) { grandchild, _ in
                    switch grandchild.name {
                    case "name": return "\(f).field_name"
                    case "type": return "\(f).field_type"
                    case "__typename": return "'RecordField'"
                    default: throw QueryError.noField(grandchild, of: "RecordField")
                    }
                }
                return """
                    (SELECT coalesce(json_agg(\(recordField) ORDER BY \(f).field_name), '[]') FROM canopy.field_types \(f) \
                    WHERE \(f).record_type = \(t).record_type AND left(\(f).field_name, 3) <> '___')
                    """
            default: throw QueryError.noField(child, of: "RecordType")
            }
        }
        builder.append("""
            SELECT coalesce(json_agg(\(recordType) ORDER BY \(t).record_type), '[]')::text \
            FROM (SELECT DISTINCT record_type FROM canopy.field_types) \(t)
            """)
        statement = builder.query
    }
}

extension RecordTypesPlan: FieldPlan {
    public func answer(_ row: JSONRow?) throws -> String? { row?.json ?? "[]" }
}

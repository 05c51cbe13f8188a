import PostgresNIO

/// `me`: the caller's own user, as one statement whose JSON PostgreSQL
/// builds with exactly the fields asked for. Row-level security decides
/// which row `canopy.current_user_id()` may read.
public struct MePlan: Sendable {
    /// The response keys and the column each one reads.
    public let columns: [(responseKey: String, column: UserColumn)]

    public enum UserColumn: String, Sendable {
        case userRecordName = "record_name"
        case name, email, phone
        case typename
    }

    public init(_ field: SelectedField) throws {
        columns = try field.children.map { child in
            switch child.name {
            case "userRecordName": return (child.responseKey, .userRecordName)
            case "name": return (child.responseKey, .name)
            case "email": return (child.responseKey, .email)
            case "phone": return (child.responseKey, .phone)
            case "__typename": return (child.responseKey, .typename)
            default:
                throw QueryError(.badRequest, "User has no field \(child.name)")
            }
        }
    }

    /// One row, one column: the `User` object as JSON text (no row: nobody).
    public var statement: SQLStatement {
        var builder = SQLBuilder()
        var parts: [String] = []
        for entry in columns {
            let key = builder.key(entry.responseKey)
            switch entry.column {
            case .typename: parts.append("\(key), 'User'")
            default: parts.append("\(key), u.\(entry.column.rawValue)")
            }
        }
        builder.append("SELECT json_build_object(\(parts.joined(separator: ", ")))::text FROM canopy.users u WHERE u.id = canopy.current_user_id()")
        return builder.statement
    }

    public var query: PostgresQuery { statement.query }
}

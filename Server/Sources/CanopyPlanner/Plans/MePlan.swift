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
        /// `usage`: canopy.my_storage() (issue 53).
        case usage
    }

    let fields: [SelectedField]

    public init(_ field: SelectedField) throws {
        fields = field.children
        columns = try field.children.map { child in
            switch child.name {
            case "userRecordName": return (child.responseKey, .userRecordName)
            case "name": return (child.responseKey, .name)
            case "email": return (child.responseKey, .email)
            case "phone": return (child.responseKey, .phone)
            case "__typename": return (child.responseKey, .typename)
            case "usage":
                var scratch = SQLBuilder()
                _ = try Projection.storageUsage(child.children, &scratch)
                return (child.responseKey, .usage)
            default:
                throw QueryError(.badRequest, "User has no field \(child.name)")
            }
        }
    }

    /// One row, one column: the `User` object as JSON text (no row: nobody).
    public var statement: SQLStatement {
        var builder = SQLBuilder()
        let columns = Dictionary(self.columns.map { ($0.responseKey, $0.column) }, uniquingKeysWith: { first, _ in first })
        let fields = self.fields
        // The columns were checked in init; the closure cannot fail.
        let object = (try? Projection.object(fields, &builder) { field, builder in
            let column = columns[field.responseKey]!
            switch column {
            case .typename: return "'User'"
            case .usage: return try Projection.storageUsage(field.children, &builder)
            // Set for people who signed in with a provider (their name there).
            case .name: return "coalesce(u.display_name, u.name)"
            default: return "u.\(unescaped: column.rawValue)"
            }
        }) ?? "NULL"
        builder.append("SELECT \(object)::text FROM canopy.users u WHERE u.id = canopy.current_user_id()")
        return builder.query
    }
}

extension MePlan {
    /// The caller as (userRecordName, name, email, phone): Web Services'
    /// `users/current` and `users/caller`, without a selection. No row: nobody.
    public static var userStatement: SQLStatement {
        var builder = SQLBuilder()
        builder.append("SELECT u.record_name, coalesce(u.display_name, u.name), u.email, u.phone FROM canopy.users u WHERE u.id = canopy.current_user_id()")
        return builder.query
    }

    public static func decodeUser(_ row: PostgresRow) throws -> (userRecordName: String, name: String?, email: String?, phone: String?) {
        try row.decode((String, String?, String?, String?).self)
    }
}

extension MePlan: FieldPlan {
    public func answer(_ row: JSONRow?) throws -> String? {
        guard let json = row?.json else { throw QueryError(.notAuthenticated, "the token's user no longer exists") }
        return json
    }
}

/// A schema file in CloudKit's schema language (what `cktool
/// export-schema` writes): custom security roles, record types, their
/// fields with indexes, and grants. `canopy schema` reads, applies and
/// prints it.
public struct RecordTypesDocument: Sendable, Equatable {
    /// `CREATE ROLE Name;`: the public database's custom security roles.
    public var roles: [RoleDeclaration]
    public var recordTypes: [RecordTypeDeclaration]

    public init(roles: [RoleDeclaration] = [], recordTypes: [RecordTypeDeclaration] = []) {
        self.roles = roles
        self.recordTypes = recordTypes
    }

    public subscript(recordType name: String) -> RecordTypeDeclaration? {
        recordTypes.first { $0.name == name }
    }

    /// The same roles and record types, whatever order they were written in.
    public static func == (a: Self, b: Self) -> Bool {
        Set(a.roles.map(\.name)) == Set(b.roles.map(\.name))
            && a.recordTypes.count == b.recordTypes.count && a.recordTypes.allSatisfy { b[recordType: $0.name] == $0 }
    }
}

/// `CREATE ROLE Moderator;`: a custom security role of the public
/// database, whose members an operator assigns (`canopy roles add`).
public struct RoleDeclaration: Sendable, Equatable {
    /// The security roles every schema has: everyone (even without a
    /// token), every signed-in user, and a record's creator.
    public static let builtIn: Set<String> = ["_world", "_icloud", "_creator"]

    public var name: String
    public var location: QueryError.Location?

    public init(name: String, location: QueryError.Location? = nil) {
        self.name = name
        self.location = location
    }

    /// A custom role's name: a letter, then letters, digits or _ (at most 255).
    public static func isValidName(_ name: String) -> Bool {
        Names.isRecordType(name)
    }

    public static func == (a: Self, b: Self) -> Bool { a.name == b.name }
}

/// `RECORD TYPE Name ( fields..., grants... );`
public struct RecordTypeDeclaration: Sendable, Equatable {
    public var name: String
    public var fields: [FieldDeclaration]
    public var grants: [GrantDeclaration]
    /// Where the declaration starts in its file (nil when read from the database).
    public var location: QueryError.Location?

    public init(name: String, fields: [FieldDeclaration] = [], grants: [GrantDeclaration] = [], location: QueryError.Location? = nil) {
        self.name = name
        self.fields = fields
        self.grants = grants
        self.location = location
    }

    public subscript(field name: String) -> FieldDeclaration? {
        fields.first { $0.name == name }
    }

    /// What the query compiler needs of this declaration.
    public func recordSchema(mode: RecordTypesMode = .development) -> RecordSchema {
        RecordSchema(fields: Dictionary(fields.map { ($0.name, $0.schema) }) { first, _ in first }, mode: mode)
    }

    /// The same fields (in any order) and the same grants (in order).
    public static func == (a: Self, b: Self) -> Bool {
        a.name == b.name && a.grants == b.grants && a.fields.count == b.fields.count
            && a.fields.allSatisfy { b[field: $0.name] == $0 }
    }
}

/// `name TYPE [QUERYABLE] [SORTABLE] [SEARCHABLE]`.
public struct FieldDeclaration: Sendable, Equatable {
    public var name: String
    public var schema: FieldSchema
    public var location: QueryError.Location?

    public init(name: String, schema: FieldSchema, location: QueryError.Location? = nil) {
        self.name = name
        self.schema = schema
        self.location = location
    }

    public var isSystemField: Bool { SystemField(rawValue: name) != nil }

    public static func == (a: Self, b: Self) -> Bool {
        a.name == b.name && a.schema == b.schema
    }
}

/// `GRANT READ, WRITE TO "_creator"`: who may read, create and write the
/// type's records in the public database (docs/API.md §15).
public struct GrantDeclaration: Sendable, Equatable {
    public enum Privilege: String, Sendable, CaseIterable {
        case read = "READ", write = "WRITE", create = "CREATE"
    }

    public var privileges: [Privilege]
    public var role: String
    /// Where the role is named in its file (nil when read from the database).
    public var location: QueryError.Location?

    public init(privileges: [Privilege], role: String, location: QueryError.Location? = nil) {
        self.privileges = privileges
        self.role = role
        self.location = location
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.privileges == b.privileges && a.role == b.role
    }
}

/// CloudKit's system fields as a schema file names them, with the type
/// each must be declared as and what it stands for in a query.
public enum SystemField: String, Sendable, CaseIterable {
    case recordID = "___recordID"
    case createTime = "___createTime"
    case modTime = "___modTime"
    case createdBy = "___createdBy"
    case modifiedBy = "___modifiedBy"
    case etag = "___etag"

    public var type: FieldType {
        switch self {
        case .recordID, .createdBy, .modifiedBy: return .reference
        case .createTime, .modTime: return .timestamp
        case .etag: return .string
        }
    }

    /// The predicate key that reads this field (`recordName`, `creationDate`, ...).
    public var queryKey: String? {
        switch self {
        case .recordID: return "recordName"
        case .createTime: return "creationDate"
        case .modTime: return "modificationDate"
        case .createdBy: return "createdBy"
        case .modifiedBy: return "modifiedBy"
        case .etag: return nil
        }
    }
}

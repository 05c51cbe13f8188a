/// A schema file in CloudKit's schema language (what `cktool
/// export-schema` writes): record types, their fields with indexes, and
/// grants. `canopy schema` reads, applies and prints it.
public struct RecordTypesDocument: Sendable, Equatable {
    public var recordTypes: [RecordTypeDeclaration]

    public init(recordTypes: [RecordTypeDeclaration] = []) {
        self.recordTypes = recordTypes
    }

    public subscript(recordType name: String) -> RecordTypeDeclaration? {
        recordTypes.first { $0.name == name }
    }

    /// The same record types, whatever order they were written in.
    public static func == (a: Self, b: Self) -> Bool {
        a.recordTypes.count == b.recordTypes.count && a.recordTypes.allSatisfy { b[recordType: $0.name] == $0 }
    }
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

/// `GRANT READ, WRITE TO "_creator"`: kept and exported, not enforced.
public struct GrantDeclaration: Sendable, Equatable {
    public enum Privilege: String, Sendable, CaseIterable {
        case read = "READ", write = "WRITE", create = "CREATE"
    }

    public var privileges: [Privilege]
    public var role: String

    public init(privileges: [Privilege], role: String) {
        self.privileges = privileges
        self.role = role
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

/// What the server knows of one record type when it compiles a query: each
/// field's type and indexes, as `canopy.field_types` holds them, and the
/// mode it runs in. Production mode turns a missing index into an error.
public struct RecordSchema: Sendable, Equatable {
    public var fields: [String: FieldSchema]
    public var mode: RecordTypesMode

    public init(fields: [String: FieldSchema] = [:], mode: RecordTypesMode = .development) {
        self.fields = fields
        self.mode = mode
    }

    /// A schema of plain types, no indexes (tests, and types only ever inferred).
    public init(types: [String: FieldType], mode: RecordTypesMode = .development) {
        self.init(fields: types.mapValues { FieldSchema(type: $0) }, mode: mode)
    }

    /// The type of a field (user fields; system fields are under their `___` names).
    public subscript(name: String) -> FieldType? { fields[name]?.type }

    /// The SEARCHABLE fields, by name: what `self CONTAINS` matches when there are any.
    public var searchableFields: [String] {
        fields.filter { $0.value.searchable }.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}

/// One field's type and the indexes the schema declares for it.
public struct FieldSchema: Sendable, Equatable {
    public var type: FieldType
    public var queryable: Bool
    public var sortable: Bool
    public var searchable: Bool

    public init(type: FieldType, queryable: Bool = false, sortable: Bool = false, searchable: Bool = false) {
        self.type = type
        self.queryable = queryable
        self.sortable = sortable
        self.searchable = searchable
    }
}

/// CloudKit's two environments. Development creates types and fields at
/// first save; production refuses what the schema does not declare, and
/// queries the schema has no index for.
public enum RecordTypesMode: String, Sendable, CaseIterable {
    case development, production
}

extension RecordSchema: ExpressibleByDictionaryLiteral {
    /// `["hours": .int64]`: plain types, development mode.
    public init(dictionaryLiteral elements: (String, FieldType)...) {
        self.init(types: Dictionary(uniqueKeysWithValues: elements))
    }
}

import CanopyPlanner
import CanopyRequestStore

extension StoredField {
    /// The row as the query compiler and the schema language see it; nil
    /// for a type name this build does not know.
    public var fieldSchema: FieldSchema? {
        FieldType(fieldType).map { FieldSchema(type: $0, queryable: queryable, sortable: sortable, searchable: searchable) }
    }
}

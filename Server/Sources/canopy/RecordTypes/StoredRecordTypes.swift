import CanopyAdmin
import CanopyGateway
import CanopyPlanner
import CanopyRequestStore

/// Converts between the schema language's document and the rows the
/// database keeps, in both directions, so `export` prints what `apply` stored.
enum StoredRecordTypes {
    /// - Parameter declaringGrantedRoles: for `export`, also declare the
    ///   custom roles grants name but `canopy.security_roles` lacks.
    static func document(fields: [StoredField], grants: [StoredGrant], roles: [String], declaringGrantedRoles: Bool = false) -> RecordTypesDocument {
        var types: [String: RecordTypeDeclaration] = [:]
        for field in fields {
            guard let schema = field.fieldSchema else { continue }
            types[field.recordType, default: RecordTypeDeclaration(name: field.recordType)].fields.append(FieldDeclaration(name: field.fieldName, schema: schema))
        }
        for grant in grants {
            guard let privilege = GrantDeclaration.Privilege(rawValue: grant.privilege) else { continue }
            var declaration = types[grant.recordType, default: RecordTypeDeclaration(name: grant.recordType)]
            if grant.position < declaration.grants.count {
                declaration.grants[grant.position].privileges.append(privilege)
            } else {
                declaration.grants.append(GrantDeclaration(privileges: [privilege], role: grant.role))
            }
            types[grant.recordType] = declaration
        }
        // Grants stored before CREATE ROLE was read (migrations/0025) may name
        // roles never declared: export declares them, so export | apply
        // round-trips (and apply then stores them).
        let named = declaringGrantedRoles
            ? Set(grants.map(\.role)).subtracting(RoleDeclaration.builtIn).filter(RoleDeclaration.isValidName) : []
        let declared = Set(roles).union(named).sorted()
        return RecordTypesDocument(roles: declared.map { RoleDeclaration(name: $0) }, recordTypes: types.values.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) })
    }

    static func stored(_ field: FieldDeclaration, of recordType: String) -> StoredField {
        StoredField(
            recordType: recordType, fieldName: field.name, fieldType: field.schema.type.description,
            queryable: field.schema.queryable, sortable: field.schema.sortable, searchable: field.schema.searchable
        )
    }

    static func stored(_ grants: [GrantDeclaration], of recordType: String) -> [StoredGrant] {
        grants.enumerated().flatMap { position, grant in
            grant.privileges.map { StoredGrant(recordType: recordType, privilege: $0.rawValue, role: grant.role, position: position) }
        }
    }

    static func stored(_ index: RecordTypeIndex) -> StoredIndex {
        StoredIndex(name: index.name, recordType: index.recordType, fieldName: index.fieldName, kind: index.kind.rawValue, definition: index.definition)
    }
}

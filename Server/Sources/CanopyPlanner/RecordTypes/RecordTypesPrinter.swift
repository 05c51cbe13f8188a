/// Writes a ``RecordTypesDocument`` back in the schema language, in one
/// canonical layout (record types by name; system fields, then fields by
/// name; grants as declared), so that what it prints parses to the same
/// document and `canopy schema export | canopy schema apply -` changes nothing.
public enum RecordTypesPrinter {
    static let keywords: Set<String> = [
        "DEFINE", "SCHEMA", "RECORD", "TYPE", "GRANT", "TO", "READ", "WRITE", "CREATE", "ROLE",
        "QUERYABLE", "SORTABLE", "SEARCHABLE", "LIST",
    ]

    public static func print(_ document: RecordTypesDocument) -> String {
        var out = "DEFINE SCHEMA\n"
        let roles = document.roles.map(\.name).sorted(by: precedes)
        if !roles.isEmpty {
            out += "\n" + roles.map { "    CREATE ROLE \($0);\n" }.joined()
        }
        for recordType in document.recordTypes.sorted(by: { precedes($0.name, $1.name) }) {
            out += "\n    RECORD TYPE \(recordType.name) (\n"
            let fields = ordered(recordType.fields)
            let names = fields.map { quoted($0.name) }
            let width = names.map(\.count).max() ?? 0
            var lines: [String] = []
            for (field, name) in zip(fields, names) {
                var line = name.padding(toLength: width, withPad: " ", startingAt: 0) + " \(field.schema.type)"
                if field.schema.queryable { line += " QUERYABLE" }
                if field.schema.sortable { line += " SORTABLE" }
                if field.schema.searchable { line += " SEARCHABLE" }
                lines.append(line)
            }
            for grant in recordType.grants {
                lines.append("GRANT \(grant.privileges.map(\.rawValue).joined(separator: ", ")) TO \"\(grant.role)\"")
            }
            out += lines.map { "        \($0)" }.joined(separator: ",\n")
            out += lines.isEmpty ? "    );\n" : "\n    );\n"
        }
        return out
    }

    /// System fields in CloudKit's order, then the rest by name.
    static func ordered(_ fields: [FieldDeclaration]) -> [FieldDeclaration] {
        let system = SystemField.allCases.compactMap { system in fields.first { $0.name == system.rawValue } }
        let user = fields.filter { !$0.isSystemField }.sorted { precedes($0.name, $1.name) }
        return system + user
    }

    static func quoted(_ name: String) -> String {
        name.hasPrefix("_") || keywords.contains(name.uppercased()) ? "\"\(name)\"" : name
    }

    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

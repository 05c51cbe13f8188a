import CanopyEncoding

/// Writes TypeScript declarations for a schema's record types, so that a
/// web app's editor knows `record.fields.title` is a string: a type of each
/// record type's fields, merged into CanopyJS's `RecordTypes`, which makes
/// a query of that type answer typed records, a save of it check its
/// fields, and `isRecordType` narrow one (`canopy schema typescript`,
/// docs/TYPESCRIPT.md).
///
/// The fields are a type alias, not an interface: an object type written
/// as an alias is assignable to CanopyJS's `Fields` (an index signature)
/// and an interface is not, so only with the alias is a typed record also
/// a `CanopyRecord` to `saveRecord`, `modify` or a type predicate
/// (DECISIONS 188).
///
/// A field is optional: a CloudKit record holds only the fields it was
/// saved with. Its type is the JavaScript value CanopyJS reads (values.js):
/// INT64 is `number | bigint`, since a value beyond 2^53 arrives as a
/// BigInt rather than rounded.
public enum RecordTypesTypeScript {
    /// The names the file imports, under names no record type can take.
    static let imports = ["Asset": "CanopyAsset", "Location": "CanopyLocation", "Reference": "CanopyReference"]

    /// - Parameters:
    ///   - module: the specifier the app imports CanopyJS by (its package name, or a path).
    ///   - source: where the schema came from, named in the file's header.
    public static func declarations(_ document: RecordTypesDocument, module: String = "@canopy/client", source: String) -> String {
        let recordTypes = document.recordTypes.sorted { $0.name < $1.name }
        let used = Set(recordTypes.flatMap { $0.fields.filter { !$0.isSystemField }.flatMap { importedNames($0.schema.type) } })
        let importList = (["Asset", "Location", "Reference"].filter(used.contains).map { "\($0) as \(imports[$0]!)" } + ["TypedRecord"]).joined(separator: ", ")
        var out = """
            // Record types of \(source), for CanopyJS. Written by
            // `canopy schema typescript`: write it again when the schema changes
            // rather than editing it. Include it in the compilation (tsconfig's
            // "include", or `import type {} from "./this-file"`) and a query of a
            // declared type answers typed records; `isRecordType(record, "Name")`
            // narrows any other record (docs/TYPESCRIPT.md).

            import type {\(importList)} from \(quoted(module));

            """
        var taken = Set<String>()
        let named = recordTypes.map { (recordType: $0, name: identifier($0.name, taken: &taken)) }
        for (recordType, name) in named {
            out += "\n/** The fields of a record of type \(recordType.name), as CanopyJS reads them; each is absent when the record has no value. */\n"
            out += "export type \(name)Fields = {\n"
            for field in recordType.fields where !field.isSystemField {
                out += "  /** \(describe(field.schema)) */\n"
                out += "  \(property(field.name))?: \(typeScript(field.schema.type));\n"
            }
            out += "};\n"
            out += "\n/** A record of type \(recordType.name). */\n"
            out += "export type \(name) = TypedRecord<\(quoted(recordType.name))>;\n"
        }
        out += "\ndeclare module \(quoted(module)) {\n"
        out += "  interface RecordTypes {\n"
        for (recordType, name) in named {
            out += "    \(quoted(recordType.name)): \(name)Fields;\n"
        }
        out += "  }\n}\n"
        return out
    }

    /// The TypeScript type of a value CanopyJS reads for `type`.
    public static func typeScript(_ type: FieldType) -> String {
        switch type {
        case .string: return "string"
        case .int64: return "number | bigint"
        case .double: return "number"
        case .boolean: return "boolean"
        case .timestamp: return "Date"
        case .reference: return imports["Reference"]!
        case .location: return imports["Location"]!
        case .bytes: return "Uint8Array"
        case .asset: return imports["Asset"]!
        case .list(let element):
            let inner = typeScript(element)
            return inner.contains(" ") ? "Array<\(inner)>" : "\(inner)[]"
        }
    }

    /// The CanopyJS classes a field's type names.
    static func importedNames(_ type: FieldType) -> [String] {
        switch type {
        case .reference: return ["Reference"]
        case .location: return ["Location"]
        case .asset: return ["Asset"]
        case .list(let element): return importedNames(element)
        default: return []
        }
    }

    static func describe(_ schema: FieldSchema) -> String {
        var words = [schema.type.description]
        if schema.queryable { words.append("QUERYABLE") }
        if schema.sortable { words.append("SORTABLE") }
        if schema.searchable { words.append("SEARCHABLE") }
        return words.joined(separator: " ")
    }

    /// A field's name as a property: bare when it is an identifier, quoted otherwise.
    static func property(_ name: String) -> String {
        isIdentifier(name) ? name : quoted(name)
    }

    /// A TypeScript identifier for a record type's name: invalid characters
    /// become `_`, a clash with an import or another type gains a number.
    static func identifier(_ name: String, taken: inout Set<String>) -> String {
        var base = String(name.unicodeScalars.map { isIdentifierCharacter($0) ? Character($0) : "_" })
        if base.isEmpty || base.first!.isNumber { base = "_" + base }
        if reserved.contains(base) || imports.values.contains(base) || base == "TypedRecord" { base += "Record" }
        var candidate = base
        var number = 2
        while taken.contains(candidate) {
            candidate = "\(base)\(number)"
            number += 1
        }
        taken.insert(candidate)
        return candidate
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy(isIdentifierCharacter)
    }

    static func isIdentifierCharacter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "$"
    }

    /// A JSON string literal, which is also a TypeScript one.
    static func quoted(_ text: String) -> String {
        JSONString.quoted(text)
    }

    /// Words TypeScript does not allow as a type's name.
    static let reserved: Set<String> = [
        "any", "bigint", "boolean", "break", "case", "catch", "class", "const", "continue", "debugger", "default",
        "delete", "do", "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "import",
        "in", "instanceof", "interface", "let", "never", "new", "null", "number", "object", "package", "private",
        "protected", "public", "return", "static", "string", "super", "switch", "symbol", "this", "throw", "true",
        "try", "typeof", "undefined", "unknown", "var", "void", "while", "with", "yield",
    ]
}

/// Reads CloudKit's schema language into a ``RecordTypesDocument`` and checks it:
///
/// ```
/// DEFINE SCHEMA
///     RECORD TYPE Fasting (
///         "___recordID" REFERENCE QUERYABLE,
///         start         TIMESTAMP QUERYABLE SORTABLE,
///         tags          LIST<STRING> QUERYABLE,
///         GRANT WRITE TO "_creator",
///         GRANT READ TO "_world"
///     );
/// ```
///
/// Keywords are case-insensitive. Every error carries the line and column
/// it was found at.
public struct RecordTypesParser {
    private var tokens: [RecordTypesLexer.Token]
    private var position = 0

    public static func parse(_ source: String) throws -> RecordTypesDocument {
        var parser = RecordTypesParser(tokens: try RecordTypesLexer.tokens(source))
        let document = try parser.document()
        try RecordTypesParser.check(document)
        return document
    }

    private init(tokens: [RecordTypesLexer.Token]) {
        self.tokens = tokens
    }

    static func error(_ location: QueryError.Location?, _ message: String) -> QueryError {
        QueryError(.invalidArguments, message, locations: location.map { [$0] } ?? [])
    }

    private var current: RecordTypesLexer.Token { tokens[position] }

    private mutating func next() -> RecordTypesLexer.Token {
        defer { if position < tokens.count - 1 { position += 1 } }
        return tokens[position]
    }

    private func isKeyword(_ keyword: String, _ token: RecordTypesLexer.Token? = nil) -> Bool {
        if case .word(let word) = (token ?? current).kind { return word.uppercased() == keyword }
        return false
    }

    private mutating func expect(keyword: String, _ what: String) throws {
        guard isKeyword(keyword) else { throw Self.error(current.location, "expected \(what), found \(current.text)") }
        _ = next()
    }

    private mutating func expect(symbol: Character) throws {
        guard current.kind == .symbol(symbol) else {
            throw Self.error(current.location, "expected '\(symbol)', found \(current.text)")
        }
        _ = next()
    }

    private mutating func document() throws -> RecordTypesDocument {
        var document = RecordTypesDocument()
        if isKeyword("DEFINE") {
            _ = next()
            try expect(keyword: "SCHEMA", "SCHEMA after DEFINE")
        }
        while current.kind != .end {
            if isKeyword("CREATE") {
                document.roles.append(try role())
                continue
            }
            guard isKeyword("RECORD") else {
                throw Self.error(current.location, "expected RECORD TYPE or CREATE ROLE, found \(current.text)")
            }
            document.recordTypes.append(try recordType())
        }
        return document
    }

    /// `CREATE ROLE Name;`
    private mutating func role() throws -> RoleDeclaration {
        let start = next().location
        try expect(keyword: "ROLE", "ROLE after CREATE")
        let name = try self.name("a role name")
        guard RoleDeclaration.isValidName(name.text) else {
            throw Self.error(name.location, "role name '\(name.text)' must be a letter followed by letters, digits or _ (at most 255); _world, _icloud and _creator are built in")
        }
        if current.kind == .symbol(";") { _ = next() }
        return RoleDeclaration(name: name.text, location: start)
    }

    private mutating func recordType() throws -> RecordTypeDeclaration {
        let start = next().location
        try expect(keyword: "TYPE", "TYPE after RECORD")
        let name = try self.name("a record type name")
        var declaration = RecordTypeDeclaration(name: name.text, location: start)
        guard Names.isRecordType(name.text) else {
            throw Self.error(name.location, "record type name '\(name.text)' must be a letter followed by letters, digits or _ (at most 255)")
        }
        try expect(symbol: "(")
        while current.kind != .symbol(")") {
            if isKeyword("GRANT") {
                declaration.grants.append(try grant())
            } else {
                declaration.fields.append(try field())
            }
            guard current.kind == .symbol(",") else { break }
            _ = next()
        }
        try expect(symbol: ")")
        if current.kind == .symbol(";") { _ = next() }
        return declaration
    }

    private mutating func name(_ what: String) throws -> (text: String, location: QueryError.Location) {
        let token = next()
        switch token.kind {
        case .word(let word): return (word, token.location)
        case .quoted(let quoted): return (quoted, token.location)
        default: throw Self.error(token.location, "expected \(what), found \(token.text)")
        }
    }

    private mutating func grant() throws -> GrantDeclaration {
        _ = next()
        var privileges: [GrantDeclaration.Privilege] = []
        repeat {
            if !privileges.isEmpty { _ = next() }
            let token = next()
            guard case .word(let word) = token.kind, let privilege = GrantDeclaration.Privilege(rawValue: word.uppercased()) else {
                throw Self.error(token.location, "expected READ, WRITE or CREATE, found \(token.text)")
            }
            privileges.append(privilege)
        } while current.kind == .symbol(",") && GrantDeclaration.Privilege.allCases.contains { isKeyword($0.rawValue, tokens[position + 1]) }
        try expect(keyword: "TO", "TO and a role")
        let role = next()
        let name: String
        switch role.kind {
        case .quoted(let quoted) where !quoted.isEmpty && quoted.utf8.count <= 255: name = quoted
        case .word(let word): name = word
        default: throw Self.error(role.location, "expected a role name (\"_world\", \"_icloud\", \"_creator\" or one of CREATE ROLE), found \(role.text)")
        }
        return GrantDeclaration(privileges: privileges, role: name, location: role.location)
    }

    private mutating func field() throws -> FieldDeclaration {
        let name = try self.name("a field name or GRANT")
        guard Names.isFieldName(name.text) || SystemField(rawValue: name.text) != nil else {
            throw Self.error(name.location, name.text.hasPrefix("___")
                ? "'\(name.text)' is not a system field (___recordID, ___createTime, ___modTime, ___createdBy, ___modifiedBy, ___etag)"
                : "field name '\(name.text)' must be a letter followed by letters, digits or _ (at most 255)")
        }
        var schema = FieldSchema(type: try type())
        while case .word(let word) = current.kind {
            switch word.uppercased() {
            case "QUERYABLE": schema.queryable = true
            case "SORTABLE": schema.sortable = true
            case "SEARCHABLE": schema.searchable = true
            default: throw Self.error(current.location, "expected QUERYABLE, SORTABLE, SEARCHABLE, ',' or ')', found \(word)")
            }
            _ = next()
        }
        return FieldDeclaration(name: name.text, schema: schema, location: name.location)
    }

    private mutating func type() throws -> FieldType {
        let token = next()
        guard case .word(let word) = token.kind else {
            throw Self.error(token.location, "expected a field type, found \(token.text)")
        }
        if word.uppercased() == "LIST" {
            try expect(symbol: "<")
            let elementToken = current
            let element = try type()
            if case .list = element { throw Self.error(elementToken.location, "a LIST cannot hold lists") }
            try expect(symbol: ">")
            return .list(element)
        }
        guard let type = FieldType(word.uppercased()) else {
            throw Self.error(token.location, "unknown field type \(word) (ASSET, BOOLEAN, BYTES, DOUBLE, INT64, LOCATION, REFERENCE, STRING, TIMESTAMP or LIST<...>)")
        }
        return type
    }

    /// What the grammar lets through but a schema cannot mean: a name
    /// declared twice, a system field with the wrong type, an index its
    /// type cannot have.
    static func check(_ document: RecordTypesDocument) throws {
        var roles: Set<String> = []
        for role in document.roles {
            guard roles.insert(role.name).inserted else {
                throw error(role.location, "role \(role.name) is declared twice")
            }
        }
        var types: Set<String> = []
        for recordType in document.recordTypes {
            guard types.insert(recordType.name).inserted else {
                throw error(recordType.location, "record type \(recordType.name) is declared twice")
            }
            for grant in recordType.grants {
                guard RoleDeclaration.builtIn.contains(grant.role) || roles.contains(grant.role) else {
                    throw error(grant.location ?? recordType.location, "GRANT to \(grant.role), which is neither _world, _icloud nor _creator nor declared by CREATE ROLE \(grant.role)")
                }
                if grant.role == "_world", let other = grant.privileges.first(where: { $0 != .read }) {
                    throw error(grant.location ?? recordType.location, "_world may only be granted READ, not \(other.rawValue): writing needs a signed-in user")
                }
            }
            var fields: Set<String> = []
            for field in recordType.fields {
                let type = field.schema.type
                guard fields.insert(field.name).inserted else {
                    throw error(field.location, "field \(field.name) of \(recordType.name) is declared twice")
                }
                if let system = SystemField(rawValue: field.name), system.type != type {
                    throw error(field.location, "system field \(field.name) is \(system.type), not \(type)")
                }
                if field.schema.searchable && type != .string && type != .list(.string) {
                    throw error(field.location, "\(recordType.name).\(field.name) is \(type): only STRING and LIST<STRING> fields can be SEARCHABLE")
                }
                if field.schema.searchable && field.isSystemField {
                    throw error(field.location, "system field \(field.name) cannot be SEARCHABLE")
                }
                if field.schema.sortable, !type.isSortable {
                    throw error(field.location, "\(recordType.name).\(field.name) is \(type), which cannot be SORTABLE")
                }
            }
        }
    }
}

import CanopyPlanner
import CanopyWebServices
import Testing

/// The predicate printer (issue 66): a tree built without text (Web
/// Services' `filterBy`) written as Canopy's filter language reads back,
/// by the parser, as the same tree, its values from the placeholders.
@Suite("The predicate printer")
struct PredicatePrinterTests {
    /// The tree with its columns zeroed and every `$name` replaced by its value.
    static func normalized(_ tree: PredicateSyntax, args: [String: JSONValue]) -> PredicateSyntax {
        func operand(_ value: PredicateSyntax.OperandSyntax) -> PredicateSyntax.OperandSyntax {
            switch value {
            case .literal(let value, _): .literal(value, column: 0)
            case .list(let items, _): .list(items.map(operand), column: 0)
            case .named(let name, _): args[name].map { .literal($0, column: 0) } ?? .named(name, column: 0)
            case .positional(let index, _): .positional(index, column: 0)
            case .null: .null(column: 0)
            }
        }
        func kind(_ kind: PredicateSyntax.TestSyntax.Kind) -> PredicateSyntax.TestSyntax.Kind {
            switch kind {
            case .compare(let op, let value): .compare(op, operand(value))
            case .between(let low, let high): .between(operand(low), operand(high))
            case .in(let value): .in(operand(value))
            case .contains(let value): .contains(operand(value))
            case .beginsWith(let value): .beginsWith(operand(value))
            case .anyBeginsWith(let value): .anyBeginsWith(operand(value))
            case .selfContains(let value): .selfContains(operand(value))
            case .distance(let location, let op, let kilometres): .distance(location: operand(location), op: op, kilometres: operand(kilometres))
            }
        }
        switch tree {
        case .all: return .all
        case .and(let left, let right): return .and(normalized(left, args: args), normalized(right, args: args))
        case .or(let left, let right): return .or(normalized(left, args: args), normalized(right, args: args))
        case .not(let inner): return .not(normalized(inner, args: args))
        case .test(let test): return .test(.init(key: test.key, keyColumn: 0, kind: kind(test.kind)))
        }
    }

    static let filters: [String] = [
        #"{"comparator": "EQUALS", "fieldName": "title", "fieldValue": {"value": "Dune"}}"#,
        #"{"comparator": "NOT_EQUALS", "fieldName": "pages", "fieldValue": {"value": 12}}"#,
        #"{"comparator": "LESS_THAN", "fieldName": "price", "fieldValue": {"value": 1.5}}"#,
        #"{"comparator": "GREATER_THAN_OR_EQUALS", "systemFieldName": "createdTimestamp", "fieldValue": {"value": 1700000000000, "type": "TIMESTAMP"}}"#,
        #"{"comparator": "IN", "fieldName": "genre", "fieldValue": {"value": ["sf", "fantasy"]}}"#,
        #"{"comparator": "NOT_IN", "fieldName": "genre", "fieldValue": {"value": ["horror"]}}"#,
        #"{"comparator": "BEGINS_WITH", "fieldName": "title", "fieldValue": {"value": "Du"}}"#,
        #"{"comparator": "NOT_BEGINS_WITH", "fieldName": "title", "fieldValue": {"value": "X"}}"#,
        #"{"comparator": "LIST_CONTAINS", "fieldName": "tags", "fieldValue": {"value": "a"}}"#,
        #"{"comparator": "NOT_LIST_CONTAINS", "fieldName": "tags", "fieldValue": {"value": "b"}}"#,
        #"{"comparator": "LIST_CONTAINS_ALL", "fieldName": "tags", "fieldValue": {"value": ["a", "b"]}}"#,
        #"{"comparator": "NOT_LIST_CONTAINS_ANY", "fieldName": "tags", "fieldValue": {"value": ["c", "d", "e"]}}"#,
        #"{"comparator": "CONTAINS_ANY_TOKENS", "fieldValue": {"value": "desert spice"}}"#,
        #"{"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "arrakis"}}"#,
        #"{"comparator": "NEAR", "fieldName": "place", "distance": 2500, "fieldValue": {"value": {"latitude": 48.85, "longitude": 2.35}}}"#,
        #"{"comparator": "LIST_MEMBER_BEGINS_WITH", "fieldName": "tags", "fieldValue": {"value": "sp"}}"#,
        #"{"comparator": "NOT_LIST_MEMBER_BEGINS_WITH", "fieldName": "tags", "fieldValue": {"value": "zz"}}"#,
        #"{"comparator": "EQUALS", "systemFieldName": "createdUserRecordName", "fieldValue": {"value": {"recordName": "_abc", "type": "REFERENCE"}}}"#,
    ]

    @Test("every comparator of filterBy, alone and all together, prints as text the parser reads back as the same tree")
    func everyComparatorRoundTrips() throws {
        var all: [String] = []
        for filter in Self.filters {
            all.append(filter)
            try Self.roundTrip("[\(filter)]")
        }
        try Self.roundTrip("[" + all.joined(separator: ", ") + "]")
    }

    static func roundTrip(_ filterBy: String) throws {
        let query = try WebServicesQuery(try JSONValue(parsing: #"{"recordType": "Book", "filterBy": \#(filterBy)}"#))
        let text = try #require(query.filter, "\(filterBy)")
        let reread = try PredicateParser.parse(text)
        #expect(normalized(reread, args: query.args) == normalized(query.predicate, args: [:]), "\(filterBy) printed as \(text)")
        // Every value is a placeholder: the text holds none of them.
        #expect(!text.contains("Dune") && !text.contains("arrakis"), "\(text)")
    }

    @Test("written texts read back as the same tree: ANDs inside ORs and ORs inside ANDs, NOT, BETWEEN, lists, NULL and placeholders")
    func textsRoundTrip() throws {
        for text in [
            "a == 1 OR b == 2 AND c == 3",
            "(a == 1 OR b == 2) AND c == 3",
            "NOT (a BEGINSWITH 'x' OR a BEGINSWITH 'y') AND n BETWEEN {1, 5}",
            "tags IN {'a', 'b'} AND note == NULL AND d > $when",
            "a == 1 AND (b == 2 OR (c == 3 AND d == 4))",
        ] {
            let tree = try PredicateParser.parse(text)
            let (printed, args) = PredicatePrinter.print(tree)
            let reread = try PredicateParser.parse(try #require(printed))
            #expect(Self.normalized(reread, args: args) == Self.normalized(tree, args: [:]), "\(text) printed as \(printed ?? "nil")")
        }
        #expect(PredicatePrinter.print(.all).filter == nil)
        // A $name already in the tree keeps its name; values never take it.
        let mixed = try PredicateParser.parse("a == $v0 AND b == 2")
        let (text, values) = PredicatePrinter.print(mixed)
        #expect(text == "a == $v0 AND b == $v1" && values == ["v1": .int(2)], "\(text ?? "nil") \(values)")
    }

    @Test("a field named like a word of the language (not, truepredicate) is queried by its tree, and a query subscription refuses to keep its text, naming why")
    func keywordFieldNames() throws {
        for name in ["not", "truepredicate"] {
            let query = try WebServicesQuery(try JSONValue(parsing: #"{"recordType": "Book", "filterBy": [{"comparator": "EQUALS", "fieldName": "\#(name)", "fieldValue": {"value": 1}}]}"#))
            #expect(query.predicate != .all)
            #expect(throws: QueryError.self) { try query.storableFilter(at: "subscriptions[0].query") }
        }
        let plain = try WebServicesQuery(try JSONValue(parsing: #"{"recordType": "Book", "filterBy": [{"comparator": "EQUALS", "fieldName": "title", "fieldValue": {"value": "x"}}]}"#))
        #expect(try plain.storableFilter(at: "q") == "title == $v0")
    }
}

/// A parsed filter, before its values and types are checked.
public indirect enum PredicateSyntax: Equatable, Sendable {
    case all
    case and(PredicateSyntax, PredicateSyntax)
    case or(PredicateSyntax, PredicateSyntax)
    case not(PredicateSyntax)
    case test(TestSyntax)

    public struct TestSyntax: Equatable, Sendable {
        public enum Kind: Equatable, Sendable {
            case compare(String, OperandSyntax)
            case between(OperandSyntax, OperandSyntax)
            case `in`(OperandSyntax)
            case contains(OperandSyntax)
            case beginsWith(OperandSyntax)
            /// `ANY list BEGINSWITH prefix`: some member of a STRING_LIST starts with it.
            case anyBeginsWith(OperandSyntax)
            case selfContains(OperandSyntax)
            case distance(location: OperandSyntax, op: String, kilometres: OperandSyntax)
        }
        public var key: String
        /// Where the key is in the filter's text (1-based); 0 for a tree
        /// built without text.
        public var keyColumn: Int
        public var kind: Kind

        public init(key: String, keyColumn: Int, kind: Kind) {
            self.key = key
            self.keyColumn = keyColumn
            self.kind = kind
        }
    }

    public indirect enum OperandSyntax: Equatable, Sendable {
        case literal(JSONValue, column: Int)
        case list([OperandSyntax], column: Int)
        case named(String, column: Int)
        case positional(Int, column: Int)
        case null(column: Int)

        var column: Int {
            switch self {
            case .literal(_, let column), .list(_, let column), .named(_, let column), .positional(_, let column), .null(let column):
                return column
            }
        }
    }
}

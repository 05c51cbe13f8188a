/// Writes a predicate tree as Canopy's filter language, every value a
/// `$vN` placeholder bound in ``args``: the text a tree built without text
/// (Web Services' `filterBy`) is stored as (a query subscription keeps its
/// filter's text) and names its query by (a cursor). One printer, so no
/// door spells each comparator a second time beside its tree (issue 66);
/// ``PredicateParser`` reads the text back into the same tree.
public struct PredicatePrinter: Sendable {
    /// The placeholders' values, by name (`v0`, `v1`, … in the text's order).
    public private(set) var args: [String: JSONValue] = [:]

    public init() {}

    /// Placeholder names the tree already uses (`$name` operands): a value
    /// is never bound under one of them.
    private var taken: Set<String> = []

    /// The tree as text and its placeholders' values; nil text for `.all`.
    /// A `$name` or `%@` already in the tree is written as it is, its value
    /// the caller's to bind.
    public static func print(_ predicate: PredicateSyntax) -> (filter: String?, args: [String: JSONValue]) {
        if predicate == .all { return (nil, [:]) }
        var printer = PredicatePrinter()
        printer.taken = Self.names(in: predicate)
        let text = printer.text(predicate)
        return (text, printer.args)
    }

    private static func names(in predicate: PredicateSyntax) -> Set<String> {
        func names(_ operand: PredicateSyntax.OperandSyntax) -> Set<String> {
            switch operand {
            case .named(let name, _): return [name]
            case .list(let items, _): return items.reduce(into: []) { $0.formUnion(names($1)) }
            default: return []
            }
        }
        switch predicate {
        case .all: return []
        case .and(let left, let right), .or(let left, let right): return Self.names(in: left).union(Self.names(in: right))
        case .not(let inner): return Self.names(in: inner)
        case .test(let test):
            switch test.kind {
            case .compare(_, let value), .in(let value), .contains(let value), .beginsWith(let value), .anyBeginsWith(let value),
                 .selfContains(let value):
                return names(value)
            case .between(let low, let high): return names(low).union(names(high))
            case .distance(let location, _, let kilometres): return names(location).union(names(kilometres))
            }
        }
    }

    /// `predicate` as text, which the parser reads back as this very tree:
    /// AND binds tighter than OR and both group to the left, so an OR
    /// inside an AND, and an AND or OR on the right of its own kind, are
    /// parenthesised; NOT takes a parenthesised operand.
    public mutating func text(_ predicate: PredicateSyntax) -> String {
        switch predicate {
        case .all: return "TRUEPREDICATE"
        case .and(let left, let right):
            return grouped(left, when: Self.isOr) + " AND " + grouped(right, when: { Self.isOr($0) || Self.isAnd($0) })
        case .or(let left, let right):
            return text(left) + " OR " + grouped(right, when: Self.isOr)
        case .not(let inner): return "NOT (" + text(inner) + ")"
        case .test(let test): return self.test(test)
        }
    }

    private static func isAnd(_ predicate: PredicateSyntax) -> Bool {
        if case .and = predicate { return true }
        return false
    }

    private static func isOr(_ predicate: PredicateSyntax) -> Bool {
        if case .or = predicate { return true }
        return false
    }

    private mutating func grouped(_ predicate: PredicateSyntax, when needsParentheses: (PredicateSyntax) -> Bool) -> String {
        needsParentheses(predicate) ? "(" + text(predicate) + ")" : text(predicate)
    }

    private mutating func test(_ test: PredicateSyntax.TestSyntax) -> String {
        let key = test.key
        switch test.kind {
        case .compare(let op, let value): return "\(key) \(op) \(operand(value))"
        case .between(let low, let high): return "\(key) BETWEEN {\(operand(low)), \(operand(high))}"
        case .in(let list): return "\(key) IN \(operand(list))"
        case .contains(let value), .selfContains(let value): return "\(key) CONTAINS \(operand(value))"
        case .beginsWith(let value): return "\(key) BEGINSWITH \(operand(value))"
        case .anyBeginsWith(let value): return "ANY \(key) BEGINSWITH \(operand(value))"
        case .distance(let location, let op, let kilometres):
            return "distanceToLocation:fromLocation:(\(key), \(operand(location))) \(op) \(operand(kilometres))"
        }
    }

    /// A value: a literal becomes a new placeholder bound to it; a
    /// placeholder, a list or NULL is written as it was.
    private mutating func operand(_ operand: PredicateSyntax.OperandSyntax) -> String {
        switch operand {
        case .literal(let value, _):
            var number = args.count
            while taken.contains("v\(number)") { number += 1 }
            let name = "v\(number)"
            args[name] = value
            taken.insert(name)
            return "$" + name
        case .list(let items, _):
            var written: [String] = []
            for item in items { written.append(self.operand(item)) }
            return "{" + written.joined(separator: ", ") + "}"
        case .named(let name, _): return "$" + name
        case .positional: return "%@"
        case .null: return "NULL"
        }
    }
}

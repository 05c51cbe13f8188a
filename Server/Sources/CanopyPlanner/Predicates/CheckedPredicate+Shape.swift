/// A checked predicate's shape: what of it the SQL writer's text depends on
/// (``PredicateSQL``'s branches), its values left out. Two predicates of one
/// shape are written as the same text with different binds, so the plan
/// cache (issue 51) keys a template by it. Each case here mirrors a branch
/// there; the plan cache's verify mode and property test catch a branch
/// missed.
extension CheckedPredicate {
    func writeShape(into text: inout String) {
        switch self {
        case .all: text += "T"
        case .and(let left, let right):
            text += "&("; left.writeShape(into: &text); text += ","; right.writeShape(into: &text); text += ")"
        case .or(let left, let right):
            text += "|("; left.writeShape(into: &text); text += ","; right.writeShape(into: &text); text += ")"
        case .not(let inner):
            text += "!("; inner.writeShape(into: &text); text += ")"
        case .test(let test):
            text += test.target.fingerprintText
            text += ":"
            switch test.kind {
            case .compare(let comparison, let value): text += "cmp" + comparison.rawValue + value.shapeKind
            case .isNil(let isNil): text += isNil ? "nil" : "set"
            case .between(let low, let high): text += "btw" + low.shapeKind + high.shapeKind
            case .in(let values): text += "in" + (values.first?.shapeKind ?? "[]")
            case .listContains(let value): text += "has" + value.shapeKind
            case .beginsWith(let prefix): text += PredicateSQL.upperBound(of: prefix) == nil ? "bw*" : "bw"
            case .listMemberBeginsWith(let prefix): text += PredicateSQL.upperBound(of: prefix) == nil ? "lbw*" : "lbw"
            case .selfContains(let search, let fields):
                text += PredicateSQL.hasWords(search) ? "sc" : "sc*"
                text += fields.map { "[" + $0.joined(separator: ",") + "]" } ?? "all"
            case .distance(_, _, let orEqual, _): text += orEqual ? "near<=" : "near<"
            }
        }
    }
}

extension CheckedPredicate.Scalar {
    /// The scalar's kind, which picks its cast.
    var shapeKind: String {
        switch self {
        case .string: return "s"
        case .number: return "n"
        case .bool: return "b"
        case .time: return "t"
        }
    }
}

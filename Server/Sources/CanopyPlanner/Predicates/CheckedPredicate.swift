import Foundation

/// A filter whose keys are typed against the record type's schema and whose
/// values (literals and placeholders alike) are resolved and checked. The
/// SQL writer and the tests' in-memory evaluator both start from this.
public indirect enum CheckedPredicate: Equatable, Sendable {
    case all
    case and(CheckedPredicate, CheckedPredicate)
    case or(CheckedPredicate, CheckedPredicate)
    case not(CheckedPredicate)
    case test(Test)

    /// What a comparison looks at.
    public enum Target: Equatable, Sendable {
        case field(String, FieldType)
        case recordName, creationDate, modificationDate, createdBy, modifiedBy

        /// The target as `String(describing:)` printed it when cursors'
        /// fingerprints were first made of it (so cursors issued by earlier
        /// builds stay valid), without the reflection that took 4% of a
        /// records request's CPU (issue 39).
        public var fingerprintText: String {
            switch self {
            case .field(let name, let type): return "field(\"\(name)\", \(type.description))"
            case .recordName: return "recordName"
            case .creationDate: return "creationDate"
            case .modificationDate: return "modificationDate"
            case .createdBy: return "createdBy"
            case .modifiedBy: return "modifiedBy"
            }
        }

        /// The type values are compared as.
        public var valueType: FieldType {
            switch self {
            case .field(_, let type): return type
            case .recordName, .createdBy, .modifiedBy: return .string
            case .creationDate, .modificationDate: return .timestamp
            }
        }
    }

    /// A value to compare with, already in the target's terms.
    public enum Scalar: Equatable, Sendable {
        case string(String)
        case number(Double)
        case bool(Bool)
        /// Milliseconds since the epoch.
        case time(Double)
    }

    /// Whether every record this predicate matches has a value for `target`
    /// (so records missing it need not be looked for).
    public func requiresValue(of target: Target) -> Bool {
        switch self {
        case .all, .not: return false
        case .and(let left, let right): return left.requiresValue(of: target) || right.requiresValue(of: target)
        case .or(let left, let right): return left.requiresValue(of: target) && right.requiresValue(of: target)
        case .test(let test):
            guard test.target == target else { return false }
            switch test.kind {
            case .isNil, .selfContains: return false
            default: return true
            }
        }
    }

    public enum Comparison: String, Equatable, Sendable {
        case equal = "=", notEqual = "<>", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    }

    public struct Test: Equatable, Sendable {
        public enum Kind: Equatable, Sendable {
            case compare(Comparison, Scalar)
            case isNil(Bool)
            case between(Scalar, Scalar)
            case `in`([Scalar])
            case listContains(Scalar)
            case beginsWith(String)
            /// Some member of a STRING_LIST starts with the prefix.
            case listMemberBeginsWith(String)
            /// The words of the text, in the SEARCHABLE fields (nil: every string field).
            case selfContains(String, fields: [String]?)
            case distance(latitude: Double, longitude: Double, orEqual: Bool, kilometres: Double)
        }
        public var target: Target
        public var kind: Kind

        public init(target: Target, kind: Kind) {
            self.target = target
            self.kind = kind
        }
    }
}

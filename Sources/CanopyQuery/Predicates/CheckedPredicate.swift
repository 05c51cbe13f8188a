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

        /// The type values are compared as.
        var valueType: FieldType {
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
            case selfContains(String)
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

/// A field's type in a record type's schema (docs/API.md §4), as
/// `canopy.field_types` stores it.
public indirect enum FieldType: Sendable, Equatable, CustomStringConvertible {
    case string, int64, double, boolean, timestamp, reference, location, bytes
    /// A file (docs/API.md §11): saved with an upload token from `POST /assets`, stored as its digest, size and type.
    case asset
    case list(FieldType)

    public init?(_ text: String) {
        if text.hasPrefix("LIST<") && text.hasSuffix(">") {
            guard let element = FieldType(String(text.dropFirst(5).dropLast())) else { return nil }
            self = .list(element)
            return
        }
        switch text {
        case "STRING": self = .string
        case "INT64": self = .int64
        case "DOUBLE": self = .double
        case "BOOLEAN": self = .boolean
        case "TIMESTAMP": self = .timestamp
        case "REFERENCE": self = .reference
        case "LOCATION": self = .location
        case "BYTES": self = .bytes
        case "ASSET": self = .asset
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .string: return "STRING"
        case .int64: return "INT64"
        case .double: return "DOUBLE"
        case .boolean: return "BOOLEAN"
        case .timestamp: return "TIMESTAMP"
        case .reference: return "REFERENCE"
        case .location: return "LOCATION"
        case .bytes: return "BYTES"
        case .asset: return "ASSET"
        case .list(let element): return "LIST<\(element)>"
        }
    }

    var isNumber: Bool { self == .int64 || self == .double }

    /// Whether values of this type have an order (and so a btree index).
    public var isSortable: Bool {
        switch self {
        case .string, .int64, .double, .boolean, .timestamp, .reference: return true
        case .location, .bytes, .asset, .list: return false
        }
    }
}


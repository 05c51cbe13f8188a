import Foundation

/// A record field's value with its Canopy type (docs/API.md §4); what
/// `Record`'s subscript stores. Apps usually assign Swift values
/// (`record["endDate"] = Date()`) and read them back with `as?`.
public enum FieldValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    case bool(Bool)
    case date(Date)
    case bytes(Data)
    case location(Location)
    case reference(Record.Reference)
    case asset(Asset)
    case list([FieldValue])

    /// The Swift value an app reads back: `String`, `Int`, `Double`, `Bool`,
    /// `Date`, `Data`, `Location`, `Record.Reference`, `Asset`, or an
    /// array of one of these.
    public var recordValue: any RecordValue {
        switch self {
        case .string(let value): return value
        case .int64(let value): return Int(value)
        case .double(let value): return value
        case .bool(let value): return value
        case .date(let value): return value
        case .bytes(let value): return value
        case .location(let value): return value
        case .reference(let value): return value
        case .asset(let value): return value
        case .list(let values):
            switch values.first {
            case .string?: return values.compactMap { $0.recordValue as? String }
            case .int64?: return values.compactMap { $0.recordValue as? Int }
            case .double?: return values.compactMap { $0.recordValue as? Double }
            case .bool?: return values.compactMap { $0.recordValue as? Bool }
            case .date?: return values.compactMap { $0.recordValue as? Date }
            case .bytes?: return values.compactMap { $0.recordValue as? Data }
            case .location?: return values.compactMap { $0.recordValue as? Location }
            case .reference?: return values.compactMap { $0.recordValue as? Record.Reference }
            case .asset?: return values.compactMap { $0.recordValue as? Asset }
            case .list?, nil: return [String]()
            }
        }
    }
}

/// A Swift type that a record field can hold (CKRecordValueProtocol).
public protocol RecordValue: Sendable {
    var fieldValue: FieldValue { get }
}

extension String: RecordValue { public var fieldValue: FieldValue { .string(self) } }
extension Int: RecordValue { public var fieldValue: FieldValue { .int64(Int64(self)) } }
extension Int64: RecordValue { public var fieldValue: FieldValue { .int64(self) } }
extension Int32: RecordValue { public var fieldValue: FieldValue { .int64(Int64(self)) } }
extension Double: RecordValue { public var fieldValue: FieldValue { .double(self) } }
extension Float: RecordValue { public var fieldValue: FieldValue { .double(Double(self)) } }
extension Bool: RecordValue { public var fieldValue: FieldValue { .bool(self) } }
extension Date: RecordValue { public var fieldValue: FieldValue { .date(self) } }
extension Data: RecordValue { public var fieldValue: FieldValue { .bytes(self) } }
extension Location: RecordValue { public var fieldValue: FieldValue { .location(self) } }
extension Record.Reference: RecordValue { public var fieldValue: FieldValue { .reference(self) } }
extension Asset: RecordValue { public var fieldValue: FieldValue { .asset(self) } }
extension FieldValue: RecordValue { public var fieldValue: FieldValue { self } }
extension Array: RecordValue where Element: RecordValue {
    public var fieldValue: FieldValue { .list(map(\.fieldValue)) }
}

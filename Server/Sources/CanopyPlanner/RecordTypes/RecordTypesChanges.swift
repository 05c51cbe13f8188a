/// What applying a schema file changes in the schema the database holds:
/// computed before anything is written, so `apply` can refuse as a whole
/// (production mode is additive only) and report what it did line by line.
public struct RecordTypesChanges: Sendable, Equatable {
    public enum Change: Sendable, Equatable, CustomStringConvertible {
        case addField(recordType: String, FieldDeclaration)
        case changeIndexes(recordType: String, from: FieldDeclaration, to: FieldDeclaration)
        case retype(recordType: String, from: FieldDeclaration, to: FieldDeclaration)
        case dropField(recordType: String, FieldDeclaration)
        case setGrants(recordType: String, [GrantDeclaration])
        /// A custom security role declared (`CREATE ROLE`) or no longer.
        case addRole(String)
        case dropRole(String)

        /// The record type changed; nil for a role.
        public var recordType: String? {
            switch self {
            case .addField(let type, _), .changeIndexes(let type, _, _), .retype(let type, _, _), .dropField(let type, _), .setGrants(let type, _):
                return type
            case .addRole, .dropRole:
                return nil
            }
        }

        public var description: String {
            switch self {
            case .addField(let type, let field): return "add \(type).\(field.name) \(Self.describe(field))"
            case .changeIndexes(let type, let from, let to):
                return "indexes of \(type).\(to.name): \(Self.indexes(from)) -> \(Self.indexes(to))"
            case .retype(let type, let from, let to): return "retype \(type).\(to.name) from \(from.schema.type) to \(to.schema.type)"
            case .dropField(let type, let field): return "drop \(type).\(field.name) \(field.schema.type)"
            case .setGrants(let type, let grants):
                return "grants of \(type): " + (grants.isEmpty ? "none (CloudKit's defaults)" : grants.map { "\($0.privileges.map(\.rawValue).joined(separator: ", ")) TO \"\($0.role)\"" }.joined(separator: "; "))
            case .addRole(let name): return "create role \(name)"
            case .dropRole(let name): return "drop role \(name) (its members lose it)"
            }
        }

        static func describe(_ field: FieldDeclaration) -> String {
            let indexes = Self.indexes(field)
            return "\(field.schema.type)" + (indexes == "no indexes" ? "" : " " + indexes)
        }

        static func indexes(_ field: FieldDeclaration) -> String {
            var names: [String] = []
            if field.schema.queryable { names.append("QUERYABLE") }
            if field.schema.sortable { names.append("SORTABLE") }
            if field.schema.searchable { names.append("SEARCHABLE") }
            return names.isEmpty ? "no indexes" : names.joined(separator: " ")
        }
    }

    public var changes: [Change]

    /// The changes that turn `current` into `desired`: record types and
    /// fields absent from `desired` are dropped, as CloudKit's import does.
    public static func between(current: RecordTypesDocument, desired: RecordTypesDocument) -> RecordTypesChanges {
        var changes: [Change] = []
        let currentRoles = Set(current.roles.map(\.name)), desiredRoles = Set(desired.roles.map(\.name))
        changes += desiredRoles.subtracting(currentRoles).sorted(by: RecordTypesPrinter.precedes).map(Change.addRole)
        changes += currentRoles.subtracting(desiredRoles).sorted(by: RecordTypesPrinter.precedes).map(Change.dropRole)
        let names = Set(current.recordTypes.map(\.name)).union(desired.recordTypes.map(\.name))
        for name in names.sorted(by: RecordTypesPrinter.precedes) {
            let old = current[recordType: name] ?? RecordTypeDeclaration(name: name)
            let new = desired[recordType: name] ?? RecordTypeDeclaration(name: name)
            for field in RecordTypesPrinter.ordered(new.fields) {
                guard let before = old[field: field.name] else {
                    changes.append(.addField(recordType: name, field))
                    continue
                }
                if before.schema.type != field.schema.type {
                    changes.append(.retype(recordType: name, from: before, to: field))
                } else if before.schema != field.schema {
                    changes.append(.changeIndexes(recordType: name, from: before, to: field))
                }
            }
            for field in RecordTypesPrinter.ordered(old.fields) where new[field: field.name] == nil {
                changes.append(.dropField(recordType: name, field))
            }
            if old.grants != new.grants {
                changes.append(.setGrants(recordType: name, new.grants))
            }
        }
        return RecordTypesChanges(changes: changes)
    }

    public var isEmpty: Bool { changes.isEmpty }

    /// Why these changes cannot be applied in `mode`, one line each: a
    /// production schema only grows (no field dropped or retyped, no index
    /// removed: deployed apps may be running queries on it).
    public func refusals(in mode: RecordTypesMode) -> [String] {
        guard mode == .production else { return [] }
        return changes.compactMap { change in
            switch change {
            case .dropField(let type, let field):
                return "\(type).\(field.name) (\(field.schema.type)) would be dropped: a production schema is additive only"
            case .dropRole(let name):
                return "role \(name) would be dropped: a production schema is additive only"
            case .retype(let type, let from, let to):
                return "\(type).\(to.name) would change from \(from.schema.type) to \(to.schema.type): a production schema is additive only"
            case .changeIndexes(let type, let from, let to):
                let removed = [("QUERYABLE", from.schema.queryable && !to.schema.queryable), ("SORTABLE", from.schema.sortable && !to.schema.sortable),
                               ("SEARCHABLE", from.schema.searchable && !to.schema.searchable)].filter(\.1).map(\.0)
                guard !removed.isEmpty else { return nil }
                return "\(type).\(to.name) would lose \(removed.joined(separator: " and ")): a production schema is additive only"
            default:
                return nil
            }
        }
    }
}

import Foundation
import PostgresNIO

/// `modifyRecords`: saves and deletes in one zone. `canopy.modify_records`
/// writes each record as the caller (row-level security decides), after
/// taking the zone's lock first (`canopy.lock_zone_for_write`, so concurrent
/// batches cannot deadlock), and answers the rows it wrote; the saved records
/// and the server records of conflicts are rendered as JSON for exactly the
/// selection asked for, in the same statement where ``rendersInWrite``,
/// else read back by a second.
public struct ModifyRecordsPlan: Sendable {
    public static let maximumItems = 400
    public static let maximumFieldsBytes = 1_048_576

    public enum SavePolicy: String, Sendable {
        case ifServerRecordUnchanged = "IF_SERVER_RECORD_UNCHANGED"
        case changedKeys = "CHANGED_KEYS"
        case allKeys = "ALL_KEYS"
        /// The tag checked, and only the given keys changed: Web Services'
        /// `update` (and what CloudKit's own clients get from
        /// IF_SERVER_RECORD_UNCHANGED, as they send only changed keys).
        case ifServerRecordUnchangedChangedKeys = "IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS"

        /// Whether fields left out (or null) are kept from the server's record.
        var mergesKeys: Bool { self == .changedKeys || self == .ifServerRecordUnchangedChangedKeys }
    }

    /// A per-record failure, with its API code (the gateway maps SQLSTATEs).
    public struct RecordFailure: Sendable, Equatable {
        public var recordName: String
        public var code: ErrorCode
        public var message: String
        public var serverRecordID: Int64?

        public init(recordName: String, code: ErrorCode, message: String, serverRecordID: Int64? = nil) {
            self.recordName = recordName
            self.code = code
            self.message = message
            self.serverRecordID = serverRecordID
        }
    }

    /// What the writing statement did.
    public struct Outcome: Sendable {
        public var saved: [Int64]
        public var deleted: [String]
        public var failures: [RecordFailure]
        public init(saved: [Int64], deleted: [String], failures: [RecordFailure]) {
            self.saved = saved
            self.deleted = deleted
            self.failures = failures
        }
    }

    /// The raw result of `canopy.modify_records`, before codes are mapped.
    public struct RawResult: Decodable, Sendable {
        public struct RawError: Decodable, Sendable {
            public var recordName: String
            /// The API code the function chose, or nil with a SQLSTATE.
            public var code: ErrorCode?
            public var sqlstate: String?
            public var message: String
            public var serverRecordId: Int64?
        }
        public var saved: [Int64]
        public var deleted: [String]
        public var errors: [RawError]
    }

    /// GraphQL's selection under `ModifyResult`; nil for Web Services.
    let field: SelectedField?
    let request: ParsedRequest?
    /// Web Services: saved records read back as CloudKit's dictionaries.
    let style: CloudKitRecordStyle?
    public let zone: ZoneReference
    public let atomic: Bool
    public let policy: SavePolicy
    /// Saves that passed validation, parents first, as the JSON the function takes.
    let saves: [JSONValue]
    public let deletes: [String]
    /// Deletes that happen only at the given tag (`deleteIfUnchanged`).
    public let deleteTags: [String: String]
    /// Records refused before reaching the database.
    public let refused: [RecordFailure]
    /// Every record name in the request, saves then deletes, for BATCH_REQUEST_FAILED.
    public let allNames: [String]

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let zone = try ZoneReference(scope: try DatabaseScope.read(arguments, publicRefusal: nil), in: arguments)
        let atomic = try arguments.bool("atomic", default: true)
        let policyName = try arguments.string("savePolicy") ?? SavePolicy.ifServerRecordUnchanged.rawValue
        guard let policy = SavePolicy(rawValue: policyName) else {
            throw arguments.invalid("savePolicy", "savePolicy must be IF_SERVER_RECORD_UNCHANGED, CHANGED_KEYS, ALL_KEYS or IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS")
        }
        var deleteTags: [(name: String, tag: String)] = []
        if case .array(let versions)? = try arguments.value("deleteIfUnchanged") {
            for version in versions {
                guard case .object(let fields) = version, case .string(let name)? = fields["recordName"],
                      case .string(let tag)? = fields["recordChangeTag"] else {
                    throw arguments.invalid("deleteIfUnchanged", "each of deleteIfUnchanged needs recordName and recordChangeTag")
                }
                deleteTags.append((name, tag))
            }
        }
        var inputs: [JSONValue] = []
        switch try arguments.value("save") {
        case nil, .null?: break
        case .array(let items)?: inputs = items
        case let single?: inputs = [single]
        }
        do {
            let saves = try inputs.map { input throws(QueryError) in try RecordSave.read(input) }
            try self.init(zone: zone, saves: saves, deletes: try arguments.strings("delete"), deleteIfUnchanged: deleteTags,
                          atomic: atomic, policy: policy, field: field, request: request, style: nil)
        } catch var error as QueryError where error.locations.isEmpty {
            error.locations = arguments.location("save")
            throw error
        }
    }

    /// Web Services' `records/modify`: typed saves, `deleteIfUnchanged` the
    /// tag-checked deletes by name; saved records are read back as `style`
    /// writes them.
    public init(
        zone: ZoneReference, saves: [RecordSave], deletes: [String], deleteIfUnchanged: [(name: String, tag: String)], atomic: Bool,
        policy: SavePolicy, style: CloudKitRecordStyle
    ) throws {
        try self.init(zone: zone, saves: saves.map(RecordSave.Reading.save), deletes: deletes, deleteIfUnchanged: deleteIfUnchanged, atomic: atomic,
                      policy: policy, field: nil, request: nil, style: style)
    }

    init(
        zone: ZoneReference, saves inputs: [RecordSave.Reading], deletes plain: [String], deleteIfUnchanged tagged: [(name: String, tag: String)],
        atomic: Bool, policy: SavePolicy, field: SelectedField?, request: ParsedRequest?, style: CloudKitRecordStyle?
    ) throws {
        self.field = field
        self.request = request
        self.style = style
        self.zone = zone
        self.atomic = atomic
        self.policy = policy
        // Tag-checked deletes after the plain ones, in the order given.
        let deletes = plain + tagged.map(\.name)
        self.deletes = deletes
        self.deleteTags = Dictionary(tagged.map { ($0.name, $0.tag) }, uniquingKeysWith: { first, _ in first })
        guard inputs.count + deletes.count <= Self.maximumItems else {
            throw QueryError(.limitExceeded, "modifyRecords takes at most \(Self.maximumItems) saves and deletes together, got \(inputs.count + deletes.count)")
        }

        var refused: [RecordFailure] = []
        var valid: [(name: String, parent: String?, json: JSONValue)] = []
        var seen = Set<String>()
        var allNames: [String] = []
        for input in inputs {
            let save: RecordSave
            switch input {
            case .refused(let name, let message):
                allNames.append(name)
                refused.append(RecordFailure(recordName: name, code: .invalidArguments, message: message))
                continue
            case .save(let read):
                save = read
            }
            let name = save.recordName
            allNames.append(name)
            if let problem = Self.problem(with: save) {
                refused.append(RecordFailure(recordName: name, code: .invalidArguments, message: problem))
                continue
            }
            guard seen.insert(name).inserted else {
                refused.append(RecordFailure(recordName: name, code: .invalidArguments, message: "record \(name) appears twice in the batch"))
                continue
            }
            var record = save
            if !(save.savePolicy ?? policy).mergesKeys {
                record.fields = save.fields.filter { !$0.value.isNull }
            }
            valid.append((name, record.parent, record.json))
        }
        for name in deletes {
            allNames.append(name)
            if !seen.insert(name).inserted {
                refused.append(RecordFailure(recordName: name, code: .invalidArguments, message: "record \(name) appears twice in the batch"))
            }
        }
        let (ordered, cyclic) = Self.parentsFirst(valid)
        for name in cyclic {
            refused.append(RecordFailure(recordName: name, code: .referenceViolation, message: "record \(name) is part of a cycle of parents"))
        }
        self.saves = ordered
        self.refused = refused
        self.allNames = allNames
    }

    /// Why a save cannot be saved, or nil: the one check of a save's names,
    /// parent and size, whichever door it came through.
    static func problem(with save: RecordSave) -> String? {
        let name = save.recordName
        guard Names.isRecordName(name) else {
            return "recordName must be 1-255 characters"
        }
        guard Names.isRecordType(save.recordType) else {
            return "record \(name): recordType must be a letter followed by letters, digits or _"
        }
        for key in save.fields.keys where !Names.isFieldName(key) {
            return "record \(name): field name '\(key.prefix(100))' must be a letter followed by letters, digits or _ (at most 255)"
        }
        if let parent = save.parent {
            guard Names.isRecordName(parent) else { return "record \(name): parent must be a recordName" }
            if parent == name { return "record \(name) cannot be its own parent" }
        }
        let fields = JSONValue.object(save.fields)
        if JSONWriter.sizeBound(of: fields) > maximumFieldsBytes, fields.jsonText.utf8.count > maximumFieldsBytes {
            return "record \(name): fields are larger than the limit of 1 MB"
        }
        return nil
    }

    /// Orders saves so that a parent saved in the same batch comes before
    /// its children; names in a cycle of parents are returned apart.
    static func parentsFirst(_ saves: [(name: String, parent: String?, json: JSONValue)]) -> ([JSONValue], [String]) {
        let byName = Dictionary(saves.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var state: [String: Int] = [:]  // 1 visiting, 2 done
        var ordered: [JSONValue] = []
        var cyclic: [String] = []
        func visit(_ name: String) -> Bool {
            if state[name] == 2 { return true }
            if state[name] == 1 { return false }
            state[name] = 1
            if let parent = byName[name]?.parent, byName[parent] != nil, !visit(parent) {
                state[name] = 2
                cyclic.append(name)
                return false
            }
            state[name] = 2
            ordered.append(byName[name]!.json)
            return true
        }
        for save in saves { _ = visit(save.name) }
        return (ordered, cyclic)
    }

    /// Whether the writing statement also renders what it saved (and the
    /// conflicts' server records) from the rows `canopy.modify_records`
    /// answers, so no read-back follows under the zone's lock (issue 51).
    /// Not for a batch with deletes: a delete can remove or hide a record
    /// saved earlier in the same batch (a DELETE_SELF child, a share left),
    /// which the read-back leaves out. Not for Web Services: its dictionary
    /// reads `canopy.field_types`, which the same batch can add to, and one
    /// statement sees only what was there when it began.
    public var rendersInWrite: Bool { deletes.isEmpty && style == nil }

    /// The writing statement. With ``rendersInWrite``, its rows are (whether
    /// the zone exists, the function's JSON outcome or NULL, then a record's
    /// id, name, JSON as saved and as a server record, or NULLs): the
    /// outcome's row and one row a record. Otherwise one row: whether the
    /// zone exists and the outcome, and ``readQuery(ids:)`` follows.
    public var writeQuery: SQLStatement {
        get throws {
            var builder = SQLBuilder()
            let cte = zone.cte(&builder)
            let saves = builder.bind(json: .array(self.saves))
            let deletes = builder.bind(self.deletes.filter { name in !refused.contains { $0.recordName == name } })
            let policy = builder.bind(self.policy.rawValue)
            // The tag-checked deletes bound only when there are any.
            let tagsOrNone: SQL = deleteTags.isEmpty ? "'{}'::jsonb" : builder.bind(json: .object(deleteTags.mapValues(JSONValue.string)))
            let written: SQL = """
                (SELECT zone.id, zone.owner_id, canopy.lock_zone_for_write(zone.id, zone.owner_id) AS locked FROM zone) z, \
                LATERAL canopy.modify_records(z.id, \(saves), \(deletes)::text[], \(policy), \(tagsOrNone), z.owner_id) f WHERE z.locked
                """
            guard rendersInWrite else {
                builder.append("""
                    WITH \(cte) SELECT EXISTS (SELECT 1 FROM zone), (SELECT f.outcome::text FROM \(written) AND (f.rec).id IS NULL)
                    """)
                return builder.query
            }
            let (saved, server) = try renderings(&builder)
            builder.append("""
                WITH \(cte), w AS MATERIALIZED (SELECT f.outcome, f.rec FROM \(written)) \
                SELECT EXISTS (SELECT 1 FROM zone), w.outcome::text, r.id, r.record_name, \
                CASE WHEN r.id IS NOT NULL THEN \(saved)::text END, CASE WHEN r.id IS NOT NULL THEN \(server)::text END \
                FROM (SELECT 1) one LEFT JOIN w ON true LEFT JOIN LATERAL (SELECT (w.rec).*) r ON (w.rec).id IS NOT NULL
                """)
            return builder.query
        }
    }

    /// What `writeQuery` answered: whether the zone is there for the caller,
    /// what `canopy.modify_records` did (nil when the zone is not), and, with
    /// ``rendersInWrite``, the records it rendered by id.
    public struct Written: Sendable {
        public var zoneFound: Bool
        public var result: RawResult?
        public var records: [Int64: ReadBack]
    }

    /// `writeQuery`'s rows.
    public static func decodeWritten(_ rows: [PostgresRow]) throws -> Written {
        var written = Written(zoneFound: false, result: nil, records: [:])
        for row in rows {
            guard row.count > 2 else {
                let (found, text) = try row.decode((Bool, String?).self)
                written.zoneFound = found
                written.result = try text.map { try JSONDecoder().decode(RawResult.self, from: Data($0.utf8)) }
                continue
            }
            let (found, text, id, name, saved, server) = try row.decode((Bool, String?, Int64?, String?, String?, String?).self)
            written.zoneFound = found
            if let text {
                written.result = try JSONDecoder().decode(RawResult.self, from: Data(text.utf8))
            }
            if let id, let name {
                written.records[id] = (name, saved, server)
            }
        }
        return written
    }

    /// A row of `readQuery`: a record's id and name, its JSON as saved, and
    /// its JSON as a server record.
    public static func decodeRecord(_ row: PostgresRow) throws -> (id: Int64, name: String, saved: String?, server: String?) {
        let (id, name, saved, server) = try row.decode((Int64, String, String?, String?).self)
        return (id, name, saved, server)
    }

    /// Whether anything is left to write after validation.
    public var refusesWholeBatch: Bool { atomic && !refused.isEmpty }

    /// A record read back after the write: its name, and its JSON as saved
    /// and as a server record (as the plan renders them).
    public typealias ReadBack = (name: String, saved: String?, server: String?)

    /// The reading statement: (id, name, saved JSON, server-record JSON) for the ids.
    public func readQuery(ids: [Int64]) throws -> SQLStatement {
        var builder = SQLBuilder()
        let cte = zone.cte(&builder)
        let (saved, server) = try renderings(&builder)
        let bound = builder.bind(ids)
        builder.append("""
            WITH \(cte) SELECT r.id, r.record_name, \(saved)::text, \(server)::text FROM canopy.records r WHERE r.id = ANY(\(bound)::int8[])\(zone.ownerTest("r.owner_id", &builder))
            """)
        return builder.query
    }

    /// A record aliased `r` as saved and as a server record, as the door asks.
    func renderings(_ builder: inout SQLBuilder) throws -> (saved: SQL, server: SQL) {
        if var style {
            style.zone = zone
            return (Projection.cloudKitRecord(style, &builder), "NULL::text")
        }
        let saved = try savedSelection.map { try Projection.record($0, request: request!, zone: zone, &builder) } ?? "NULL::json"
        let server = try serverRecordSelection.map { try Projection.record($0, request: request!, zone: zone, &builder) } ?? "NULL::json"
        return (saved, server)
    }

    var savedSelection: [SelectedField]? {
        field?.children.first { $0.name == "saved" }?.children
    }

    var serverRecordSelection: [SelectedField]? {
        field?.children.first { $0.name == "errors" }?.children.first { $0.name == "serverRecord" }?.children
    }

    /// The final outcome: in an atomic batch with any failure, nothing is
    /// saved or deleted and every other record is BATCH_REQUEST_FAILED.
    public func outcome(written: Outcome?) -> Outcome {
        var failures = refused + (written?.failures ?? [])
        if atomic && !failures.isEmpty {
            let failed = Set(failures.map(\.recordName))
            for name in allNames where !failed.contains(name) {
                failures.append(RecordFailure(recordName: name, code: .batchRequestFailed, message: "record \(name) was not saved because another record in the atomic batch failed"))
            }
            return Outcome(saved: [], deleted: [], failures: failures)
        }
        return Outcome(saved: written?.saved ?? [], deleted: written?.deleted ?? [], failures: failures)
    }

    /// The `ModifyResult` JSON for the selection, from the outcome and the
    /// records read back (id → (saved JSON, server-record JSON)).
    public func response(_ outcome: Outcome, records: [Int64: ReadBack]) throws -> String {
        guard let field else { return "" }
        return try field.jsonObject(typeName: "ModifyResult") { child in
            switch child.name {
            case "saved":
                return "[\(outcome.saved.compactMap { records[$0]?.saved }.joined(separator: ","))]"
            case "deleted":
                return JSONValue.array(outcome.deleted.map(JSONValue.string)).jsonText
            case "errors":
                let errors = try outcome.failures.map { failure in
                    try child.jsonObject(typeName: "RecordError") { part in
                        switch part.name {
                        case "recordName": return JSONValue.string(failure.recordName).jsonText
                        case "code": return JSONValue.string(failure.code.rawValue).jsonText
                        case "message": return JSONValue.string(failure.message).jsonText
                        case "serverRecord": return failure.serverRecordID.flatMap { records[$0]?.server } ?? "null"
                        default: throw QueryError.noField(part, of: "RecordError")
                        }
                    }
                }
                return "[\(errors.joined(separator: ","))]"
            default:
                throw QueryError.noField(child, of: "ModifyResult")
            }
        }
    }
}

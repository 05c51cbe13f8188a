import CanopyPlanner
import CanopyRequestStore
import Logging
import Synchronization

/// A record type's schema as plans need it, from the fields the database
/// keeps (cached by ``RequestDatabase/fieldTypes(of:refresh:logger:)``) and
/// the server's mode, read once when the gateway is built. The one place
/// the gateway turns stored fields into a ``RecordSchema``: queries and the
/// push deliverer's QUERY filters use it alike.
struct RecordSchemas: Sendable {
    let database: RequestDatabase
    let mode: RecordTypesMode
    /// The plans made from these schemas: a schema that changed drops its
    /// record type's plans, and its new version keys the next ones.
    let plans: PlanCache
    /// Schemas built in the last ``maximumAge``, by record type: a request
    /// takes one without a hop to the fields' actor or a rebuild (Web
    /// Services asks one for every answer that holds records).
    private let built = BuiltSchemas()
    let maximumAge: Duration
    /// Numbers a schema's versions, for the whole process.
    private static let versions = Atomic<Int>(0)

    init(database: RequestDatabase, plans: PlanCache = PlanCache(capacity: 0, verification: .off), maximumAge: Duration = .milliseconds(500)) {
        self.database = database
        self.mode = RecordTypesMode(rawValue: database.schemaMode) ?? .development
        self.plans = plans
        self.maximumAge = maximumAge
    }

    /// `recordType`'s schema; `refresh` reads the fields again past the caches.
    func schema(of recordType: String, refresh: Bool, logger: Logger) async throws -> RecordSchema {
        try await versioned(recordType, refresh: refresh, logger: logger).schema
    }

    /// `recordType`'s schema and its version: a number that changes when
    /// the schema built from the stored fields differs from the one before.
    func versioned(_ recordType: String, refresh: Bool, logger: Logger) async throws -> (schema: RecordSchema, version: Int) {
        let now = ContinuousClock.now
        if !refresh, let entry = built.entries.withLock({ $0[recordType] }), now - entry.builtAt < maximumAge {
            return (entry.schema, entry.version)
        }
        let stored = try await database.fieldTypes(of: recordType, refresh: refresh, logger: logger)
        let schema = RecordSchema(fields: stored.compactMapValues(\.fieldSchema), mode: mode)
        let (version, changed) = built.entries.withLock { cache -> (Int, Bool) in
            let previous = cache[recordType]
            let version = previous.flatMap { $0.schema == schema ? $0.version : nil }
                ?? Self.versions.add(1, ordering: .relaxed).newValue
            if cache.count >= 1024 { cache.removeAll(keepingCapacity: true) }
            cache[recordType] = (schema, now, version)
            return (version, previous.map { $0.version != version } ?? false)
        }
        if changed { plans.invalidate(recordType: recordType) }
        return (schema, version)
    }

    /// ``planning(_:logger:_:)`` given the schema's version too.
    func planning<Plan>(_ recordType: String, logger: Logger, _ make: (RecordSchema, Int) throws -> Plan) async throws -> Plan {
        do {
            let (schema, version) = try await versioned(recordType, refresh: false, logger: logger)
            return try make(schema, version)
        } catch let error as QueryError where error.code == .invalidArguments {
            let (schema, version) = try await versioned(recordType, refresh: true, logger: logger)
            return try make(schema, version)
        }
    }

    /// What `make` builds from `recordType`'s cached schema; when that is
    /// refused as INVALID_ARGUMENTS (perhaps a field saved since the types
    /// were read), from the schema read again, once.
    func planning<Plan>(_ recordType: String, logger: Logger, _ make: (RecordSchema) throws -> Plan) async throws -> Plan {
        do {
            return try make(try await schema(of: recordType, refresh: false, logger: logger))
        } catch let error as QueryError where error.code == .invalidArguments {
            return try make(try await schema(of: recordType, refresh: true, logger: logger))
        }
    }
}

/// The schemas ``RecordSchemas`` built, shared by its copies.
private final class BuiltSchemas: Sendable {
    let entries = Mutex<[String: (schema: RecordSchema, builtAt: ContinuousClock.Instant, version: Int)]>([:])
}

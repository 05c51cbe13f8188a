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
    /// Schemas built in the last ``maximumAge``, by record type: a request
    /// takes one without a hop to the fields' actor or a rebuild (Web
    /// Services asks one for every answer that holds records).
    private let built = BuiltSchemas()
    static let maximumAge: Duration = .milliseconds(500)

    init(database: RequestDatabase) {
        self.database = database
        self.mode = RecordTypesMode(rawValue: database.schemaMode) ?? .development
    }

    /// `recordType`'s schema; `refresh` reads the fields again past the caches.
    func schema(of recordType: String, refresh: Bool, logger: Logger) async throws -> RecordSchema {
        let now = ContinuousClock.now
        if !refresh, let entry = built.entries.withLock({ $0[recordType] }), now - entry.builtAt < Self.maximumAge {
            return entry.schema
        }
        let stored = try await database.fieldTypes(of: recordType, refresh: refresh, logger: logger)
        let schema = RecordSchema(fields: stored.compactMapValues(\.fieldSchema), mode: mode)
        built.entries.withLock { cache in
            if cache.count >= 1024 { cache.removeAll(keepingCapacity: true) }
            cache[recordType] = (schema, now)
        }
        return schema
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
    let entries = Mutex<[String: (schema: RecordSchema, builtAt: ContinuousClock.Instant)]>([:])
}

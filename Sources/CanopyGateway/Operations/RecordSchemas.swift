import CanopyPlanner
import CanopyRequestStore
import Logging

/// A record type's schema as plans need it, from the fields the database
/// keeps (cached by ``RequestDatabase/fieldTypes(of:refresh:logger:)``) and
/// the server's mode, read once when the gateway is built. The one place
/// the gateway turns stored fields into a ``RecordSchema``: queries and the
/// push deliverer's QUERY filters use it alike.
struct RecordSchemas: Sendable {
    let database: RequestDatabase
    let mode: RecordTypesMode

    init(database: RequestDatabase) {
        self.database = database
        self.mode = RecordTypesMode(rawValue: database.schemaMode) ?? .development
    }

    /// `recordType`'s schema; `refresh` reads the fields again past the cache.
    func schema(of recordType: String, refresh: Bool, logger: Logger) async throws -> RecordSchema {
        let stored = try await database.fieldTypes(of: recordType, refresh: refresh, logger: logger)
        return RecordSchema(fields: stored.compactMapValues(\.fieldSchema), mode: mode)
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

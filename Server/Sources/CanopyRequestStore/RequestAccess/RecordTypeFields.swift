import Logging
import PostgresNIO
import Synchronization

/// One row of `canopy.field_types`: a field's type name and its indexes.
public struct StoredField: Sendable, Equatable {
    public var recordType: String
    public var fieldName: String
    public var fieldType: String
    public var queryable: Bool
    public var sortable: Bool
    public var searchable: Bool

    public init(recordType: String, fieldName: String, fieldType: String, queryable: Bool, sortable: Bool, searchable: Bool) {
        self.recordType = recordType
        self.fieldName = fieldName
        self.fieldType = fieldType
        self.queryable = queryable
        self.sortable = sortable
        self.searchable = searchable
    }
}

/// Field types by record type, read from `canopy.field_types` and kept for
/// `maximumAge`: a first save only adds types (a miss is looked up again at
/// once), while `canopy schema apply` may change indexes or drop fields,
/// which the gateway sees within that age. Behind a lock rather than in an
/// actor (issue 51): a hit, nearly every request's case, reads a dictionary
/// without hopping to the actor's executor and back.
final class RecordTypeFields: Sendable {
    private let known = Mutex<[String: (fields: [String: StoredField], readAt: ContinuousClock.Instant)]>([:])
    private let primary: PrimaryPool
    private let maximumAge: Duration

    init(primary: PrimaryPool, maximumAge: Duration) {
        self.primary = primary
        self.maximumAge = maximumAge
    }

    /// Field name → field, for a record type; `refresh` reads them anew.
    func fields(of recordType: String, refresh: Bool, logger: Logger) async throws -> [String: StoredField] {
        let now = ContinuousClock.now
        if !refresh, let entry = known.withLock({ $0[recordType] }), now - entry.readAt < maximumAge { return entry.fields }
        var fields: [String: StoredField] = [:]
        let rows = try await primary.withConnection { connection in
            try await connection.query(
                "SELECT field_name, field_type, queryable, sortable, searchable FROM canopy.field_types WHERE record_type = \(recordType)",
                logger: logger
            ).collect()
        }
        for row in rows {
            let (name, type, queryable, sortable, searchable) = try row.decode((String, String, Bool, Bool, Bool).self)
            fields[name] = StoredField(recordType: recordType, fieldName: name, fieldType: type, queryable: queryable, sortable: sortable, searchable: searchable)
        }
        let read = fields
        known.withLock { $0[recordType] = (read, now) }
        return fields
    }
}

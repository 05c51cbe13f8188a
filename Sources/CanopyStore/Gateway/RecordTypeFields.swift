import Logging
import PostgresNIO

/// Field types by record type, read from `canopy.field_types` and kept:
/// types are only ever added (a first save fixes a field's type), so a
/// kept entry stays right; a field not known yet is looked up again.
actor RecordTypeFields {
    private var known: [String: [String: String]] = [:]
    private let client: PostgresClient

    init(client: PostgresClient) {
        self.client = client
    }

    /// Field name → type name, for a record type; `refresh` reads them anew.
    func fields(of recordType: String, refresh: Bool, logger: Logger) async throws -> [String: String] {
        if !refresh, let fields = known[recordType] { return fields }
        var fields: [String: String] = [:]
        let rows = try await client.query(
            "SELECT field_name, field_type FROM canopy.field_types WHERE record_type = \(recordType)", logger: logger
        )
        for try await (name, type) in rows.decode((String, String).self) { fields[name] = type }
        known[recordType] = fields
        return fields
    }
}

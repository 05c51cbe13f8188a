import CanopyPlanner

/// `records`: the record type's schema is read (cached) before the plan can
/// be built, since a filter or sort is typed by it.
struct RecordsOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let request = executor.request
        let recordType = try RecordsPlan.recordType(of: field, request: request)
        let keys = try await executor.database.secrets.keys("cursor", logger: executor.logger)
        let secret = SigningKey(keys.current, accepted: keys.accepted)
        let plan = try await executor.recordSchemas.planning(recordType, logger: executor.logger) { schema in
            try RecordsPlan(field, request: request, schema: schema, secret: secret)
        }
        return try await executor.run(plan)
    }
}

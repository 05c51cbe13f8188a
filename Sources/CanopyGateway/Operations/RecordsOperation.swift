import CanopyPlanner

/// `records`: the record type's schema is read (cached) before the plan can
/// be built, since a filter or sort is typed by it.
struct RecordsOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let request = executor.request
        let recordType = try RecordsPlan.recordType(of: field, request: request)
        let secret = SigningKey(try await executor.database.secrets.key("cursor", logger: executor.logger))
        let plan: RecordsPlan
        do {
            plan = try RecordsPlan(field, request: request, schema: try await schema(of: recordType, refresh: false, executor), secret: secret)
        } catch let error as QueryError where error.code == .invalidArguments {
            // Perhaps a field saved since the types were read: read them again once.
            plan = try RecordsPlan(field, request: request, schema: try await schema(of: recordType, refresh: true, executor), secret: secret)
        }
        return try await executor.run(plan)
    }

    func schema(of recordType: String, refresh: Bool, _ executor: OperationExecutor) async throws -> RecordSchema {
        let stored = try await executor.database.fieldTypes(of: recordType, refresh: refresh, logger: executor.logger)
        return RecordSchema(
            fields: stored.compactMapValues(\.fieldSchema),
            mode: RecordTypesMode(rawValue: executor.database.schemaMode) ?? .development
        )
    }
}

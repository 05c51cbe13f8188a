import CanopyPlanner

/// `records`: the record type's schema is read (cached) before the plan can
/// be built, since a filter or sort is typed by it. The request is checked
/// every time; its statement comes from the plan cache when one of its
/// shape was made before (``PlanCache``).
struct RecordsOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let request = executor.request
        let recordType = try RecordsPlan.recordType(of: field, request: request)
        let secret = try await executor.runner.cursorKey()
        let (checked, version) = try await executor.recordSchemas.planning(recordType, logger: executor.logger) { schema, version in
            (try RecordsPlan.check(field, request: request, schema: schema, secret: secret), version)
        }
        let key = PlanCache.Key(
            document: request.documentID, field: field.responseKey, variables: request.variablesBeyondArguments(of: field),
            shape: checked.shape, schemaVersion: version
        )
        return try await executor.runCached(
            key, operation: .records, recordType: recordType,
            replay: { try RecordsPlan(checked, field: field, secret: secret, template: $0) },
            recording: { try RecordsPlan(checked, field: field, request: request, secret: secret, recording: true) },
            cold: { try RecordsPlan(checked, field: field, request: request, secret: secret) }
        )
    }
}

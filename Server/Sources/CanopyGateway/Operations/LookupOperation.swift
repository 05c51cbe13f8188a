import CanopyPlanner

/// `lookup`: checked every time; its statement comes from the plan cache
/// when one of its shape was made before (``PlanCache``).
struct LookupOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let request = executor.request
        let checked = try LookupPlan.check(field, request: request)
        let key = PlanCache.Key(
            document: request.documentID, field: field.responseKey, variables: request.variablesBeyondArguments(of: field),
            shape: checked.shape, schemaVersion: 0
        )
        return try await executor.runCached(
            key, operation: .lookup, recordType: nil,
            replay: { try LookupPlan(checked, template: $0) },
            recording: { try LookupPlan(checked, field: field, request: request, recording: true) },
            cold: { try LookupPlan(checked, field: field, request: request) }
        )
    }
}

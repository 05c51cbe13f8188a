import CanopyPlanner

/// `saveShare`, `setParticipant`, `removeParticipant`, `deleteShare` and
/// `leaveShare` over GraphQL, through ``ShareMutationRun``.
struct ShareMutationOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ShareMutationPlan(field, request: executor.request)
        return try await executor.runner.mutateShares([plan], locations: executor.request.location(of: field.field))
    }
}

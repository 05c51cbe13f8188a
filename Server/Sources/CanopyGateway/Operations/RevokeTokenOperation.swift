import CanopyPlanner
import CanopyRequestStore

/// `revokeToken(prefix:)`: revokes one of the caller's tokens, then forgets
/// it from this gateway's token cache before answering, so a client's
/// sign-out resolves once the token is refused here (issue 68).
struct RevokeTokenOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try RevokeTokenPlan(field, request: executor.request)
        let answer = try await executor.run(plan)
        executor.database.forgetToken(selector: String(plan.prefix.dropFirst(BearerToken.prefix.count)))
        return answer
    }
}

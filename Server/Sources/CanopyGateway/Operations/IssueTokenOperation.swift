import CanopyPlanner
import CanopyRequestStore

/// `issueToken`: the one operation whose statement needs a value made in
/// Swift first, a fresh token from the system's secure random source
/// (``BearerToken/generate(_:)``), in the form asked for; the database stores only its hash.
struct IssueTokenOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let form = try executor.request.arguments(of: field).string("form") == "WEB_AUTH" ? BearerToken.Form.webAuth : .canopy
        let token = BearerToken.generate(form)
        let plan = try IssueTokenPlan(field, token: token.string, selector: token.selector, secretHash: token.secretHash)
        return try await executor.run(plan)
    }
}

import CanopyPlanner

/// `requestShareAccess(url)`: asks for access, then reads the share's
/// metadata as the requester now sees it, in one transaction. A share that
/// does not allow requests (or blocked the caller) answers as a URL that
/// leads nowhere.
struct RequestShareAccessOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ShareMetadataPlan(field, request: executor.request)
        let logger = executor.logger
        let row = try await executor.database.withUser(try executor.signedInUser(), device: executor.device, logger: logger) { connection in
            _ = try await connection.execute(plan.requestAccess, logger: logger)
            return try await connection.execute(plan.statement, logger: logger).first.map(ShareMetadataPlan.decode)
        }
        return try plan.answer(row)
    }
}

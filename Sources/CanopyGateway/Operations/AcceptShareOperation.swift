import CanopyPlanner

/// `acceptShare(url)`: accepts, then reads the share's metadata as the
/// participant the caller now is, in one transaction.
struct AcceptShareOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ShareMetadataPlan(field, request: executor.request)
        let logger = executor.logger
        let row = try await executor.database.withUser(try executor.signedInUser(), device: executor.device, logger: logger) { connection in
            _ = try await connection.execute(plan.accept, logger: logger)
            return try await connection.execute(plan.statement, logger: logger).first.map(ShareMetadataPlan.decode)
        }
        return try plan.answer(row)
    }
}

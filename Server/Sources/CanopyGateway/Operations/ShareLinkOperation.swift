import CanopyPlanner
import CanopyRequestStore
import Logging

/// `acceptShare(url)` and `requestShareAccess(url)`: what a person does
/// with a share's link, then the share's metadata read as they now see it,
/// in one transaction. Neither tells a stranger more than a link that
/// leads nowhere would (the functions answer alike). Web Services'
/// `records/accept` runs the same ``run(_:database:userID:device:logger:)``.
struct ShareLinkOperation: RootOperation {
    /// The statement run first: accepting, or asking for access.
    let action: @Sendable (ShareMetadataPlan) -> SQLStatement

    static let accept = ShareLinkOperation { $0.accept }
    static let requestAccess = ShareLinkOperation { $0.requestAccess }

    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ShareMetadataPlan(field, request: executor.request)
        return try await run(plan, database: executor.database, userID: try executor.signedInUser(), device: executor.device,
                             logger: executor.logger)
    }

    /// The action, then the metadata as the plan renders it, as `userID`.
    func run(_ plan: ShareMetadataPlan, database: RequestDatabase, userID: Int64, device: String?, logger: Logger) async throws -> String? {
        let row = try await database.withUser(userID, device: device, logger: logger) { connection in
            _ = try await connection.execute(action(plan), as: userID, logger: logger)
            return try await connection.execute(plan.statement, as: userID, logger: logger).first.map(ShareMetadataPlan.decode)
        }
        return try plan.answer(row)
    }
}

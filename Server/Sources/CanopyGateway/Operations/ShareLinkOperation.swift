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

    /// The action, then the metadata as the plan renders it, as `userID`,
    /// each in a transaction of its own: the action's functions run as the
    /// owner of the tables (the caller may not see the share before), and
    /// on Citus a transaction cannot then read, as the caller, the shards
    /// another user wrote in it (DECISIONS 175). The action is idempotent:
    /// a client that sees the read fail and asks again gets the answer.
    func run(_ plan: ShareMetadataPlan, database: RequestDatabase, userID: Int64, device: String?, logger: Logger) async throws -> String? {
        PlanOutcome.uncached.count()
        try await database.withUser(userID, device: device, logger: logger) { connection in
            _ = try await connection.execute(action(plan), as: userID, logger: logger)
        }
        let row = try await database.withUser(userID, device: device, logger: logger) { connection -> JSONRow? in
            guard let place = try await connection.execute(plan.locate, as: userID, logger: logger).first.map(ShareMetadataPlan.Place.decode) else {
                return nil
            }
            return try await connection.execute(try plan.statement(at: place), as: userID, logger: logger).first.map(ShareMetadataPlan.decode)
        }
        return try plan.answer(row)
    }
}

/// `shareMetadata(url)`: where the share is, then its metadata rendered
/// with that place bound (``ShareMetadataPlan``): two reads for the caller.
struct ShareMetadataOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ShareMetadataPlan(field, request: executor.request)
        guard let place = try await executor.read(plan.locate, { rows in try rows.first.map(ShareMetadataPlan.Place.decode) }) else {
            return try plan.answer(nil)
        }
        return try plan.answer(try await executor.read(try plan.statement(at: place)) { rows in try rows.first.map(ShareMetadataPlan.decode) })
    }
}

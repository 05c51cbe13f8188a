import CanopyPlanner
import CanopyRequestStore
import Logging
import PostgresNIO

/// ``ShareMutationPlan``s written: for each, locate the share, change it,
/// and read it back as the plan renders it, all in one transaction as the
/// caller (a failure leaves none of them done). One path for GraphQL's
/// sharing mutations and Web Services' share records in `records/modify`.
enum ShareMutationRun {
    /// The last plan's answer: the share's JSON text, `true`/`false` for a
    /// delete or a leave, nil for none.
    static func run(
        _ plans: [ShareMutationPlan], database: RequestDatabase, userID: Int64, device: String?, logger: Logger,
        locations: [QueryError.Location] = []
    ) async throws -> String? {
        PlanOutcome.uncached.count()
        return try await database.withUser(userID, device: device, logger: logger) { connection in
            var answer: String?
            for plan in plans {
                answer = try await run(plan, on: connection, as: userID, logger: logger, locations: locations)
            }
            return answer
        }
    }

    static func run(
        _ plan: ShareMutationPlan, on connection: PostgresConnection, as userID: Int64, logger: Logger, locations: [QueryError.Location]
    ) async throws -> String? {
        let located = try await connection.execute(plan.target.locate, as: userID, logger: logger).first.flatMap(ShareTarget.decodeLocated)
        guard let located else { throw QueryError.zoneNotFound(at: locations) }
        let shareID = located.shareID
        if plan.needsShare && shareID == nil {
            throw QueryError(.unknownItem, "\(plan.target.description) is not shared", locations: locations)
        }
        let changed = try await connection.execute(plan.change(located), as: userID, logger: logger)
            .first.map(ShareMutationPlan.decodeChanged) ?? nil
        let readBack: Int64
        switch plan.action {
        case .delete:
            return (changed ?? 0) > 0 ? "true" : "false"
        case .leave:
            guard (changed ?? 0) > 0 else {
                throw QueryError(.unknownItem, "you take part in no share of \(plan.target.description)", locations: locations)
            }
            return "true"
        case .save:
            guard let changed else { throw APIError(.internalError, "saveShare returned no share", locations: locations) }
            readBack = changed
        case .setParticipant, .removeParticipant, .decideRequest:
            guard let shareID else { throw APIError(.internalError, "no share to read back", locations: locations) }
            readBack = shareID
        }
        return try await connection.execute(plan.response(shareID: readBack, ownerID: located.ownerID), as: userID, logger: logger).first.map(JSONRow.decode)?.json
    }
}

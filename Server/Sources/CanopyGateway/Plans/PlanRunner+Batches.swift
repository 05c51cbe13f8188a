import CanopyPlanner
import CanopyRequestStore

extension PlanRunner {
    /// A `modifyRecords` / `records/modify` batch written as the caller,
    /// naming its device (``ModifyRecordsRun``: one transaction under the
    /// zone's lock, read back in it); `answer` makes the door's answer.
    func modify<Answer: Sendable>(
        _ plan: ModifyRecordsPlan, requestID: String, zoneMissing: QueryError,
        answer: @escaping @Sendable (ModifyRecordsPlan.Outcome, [Int64: ModifyRecordsPlan.ReadBack]) throws -> Answer
    ) async throws -> Answer {
        try await ModifyRecordsRun.run(
            plan, database: database, userID: try signedInUser(), device: device, requestID: requestID, logger: logger,
            zoneMissing: zoneMissing, answer: answer
        )
    }

    /// Share changes written as the caller, naming its device, all in one
    /// transaction (``ShareMutationRun``): the last one's answer.
    func mutateShares(_ plans: [ShareMutationPlan], locations: [QueryError.Location] = []) async throws -> String? {
        CanopySpan.current?.updateAttributes { attributes in
            attributes["canopy.plan"] = "ShareMutationPlan"
            attributes["canopy.plan.writes"] = true
        }
        return try await ShareMutationRun.run(plans, database: database, userID: try signedInUser(), device: device, logger: logger, locations: locations)
    }
}

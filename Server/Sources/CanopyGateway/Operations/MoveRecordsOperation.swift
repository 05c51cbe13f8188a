import CanopyPlanner

/// `moveRecords`: finds both zones as the caller sees them, then moves, in
/// one transaction; a zone the caller cannot see is ZONE_NOT_FOUND at its
/// argument.
struct MoveRecordsOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try MoveRecordsPlan(field, request: executor.request)
        let logger = executor.logger
        let arguments = executor.request.arguments(of: field)
        let userID = try executor.signedInUser()
        PlanOutcome.uncached.count()
        return try await executor.database.withUser(userID, device: executor.device, logger: logger) { connection in
            let located = try await connection.execute(plan.locate, as: userID, logger: logger).first.map(MoveRecordsPlan.decodeLocated)
            guard let source = located?.from else { throw QueryError.zoneNotFound(at: arguments.location("from")) }
            guard let target = located?.to else { throw QueryError.zoneNotFound(at: arguments.location("to")) }
            return try await connection.execute(try plan.move(from: source, to: target), as: userID, logger: logger).first.map(JSONRow.decode)?.json
        }
    }
}

import CanopyPlanner

/// `saveShare`, `setParticipant`, `removeParticipant`, `deleteShare` and
/// `leaveShare`, in one transaction: locate the share, change it, read it back.
struct ShareMutationOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ShareMutationPlan(field, request: executor.request)
        let logger = executor.logger
        let location = executor.request.location(of: field.field)
        return try await executor.database.withUser(try executor.signedInUser(), device: executor.device, logger: logger) { connection in
            let located = try await connection.execute(plan.target.locate, logger: logger).first.map(ShareTarget.decodeLocated)
            guard let located, let zoneID = located.zoneID else { throw QueryError.zoneNotFound(at: location) }
            let shareID = located.shareID
            if plan.needsShare && shareID == nil {
                throw QueryError(.unknownItem, "\(plan.target.description) is not shared", locations: location)
            }
            let changed = try await connection.execute(plan.change(zoneID: zoneID, shareID: shareID), logger: logger)
                .first.map(ShareMutationPlan.decodeChanged) ?? nil
            let readBack: Int64
            switch plan.action {
            case .delete:
                return (changed ?? 0) > 0 ? "true" : "false"
            case .leave:
                guard (changed ?? 0) > 0 else {
                    throw QueryError(.unknownItem, "you take part in no share of \(plan.target.description)", locations: location)
                }
                return "true"
            case .save:
                guard let changed else { throw APIError(.internalError, "saveShare returned no share", locations: location) }
                readBack = changed
            case .setParticipant, .removeParticipant, .decideRequest:
                guard let shareID else { throw APIError(.internalError, "no share to read back", locations: location) }
                readBack = shareID
            }
            return try await connection.execute(plan.response(shareID: readBack), logger: logger).first.map(JSONRow.decode)?.json
        }
    }
}

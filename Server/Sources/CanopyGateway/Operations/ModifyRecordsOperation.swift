import CanopyPlanner
import Foundation

/// `modifyRecords`: the plan written by ``ModifyRecordsRun``, answered as
/// the selection of `ModifyResult` asks.
struct ModifyRecordsOperation: RootOperation {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ModifyRecordsPlan(field, request: executor.request)
        return try await executor.runner.modify(
            plan, requestID: executor.requestID, zoneMissing: QueryError.zoneNotFound(at: executor.request.location(of: field.field))
        ) { outcome, records in
            try plan.response(outcome, records: records)
        }
    }
}

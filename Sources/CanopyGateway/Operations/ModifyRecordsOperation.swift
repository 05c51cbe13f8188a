import CanopyPlanner
import Foundation

/// `modifyRecords`: the batch in one transaction under the zone's lock,
/// then the saved records (and server records of conflicts) read back in
/// the same transaction; an atomic batch with a failure rolls back and
/// still answers.
struct ModifyRecordsOperation: RootOperation {
    /// Thrown inside the transaction to roll it back and still answer.
    struct RollbackAndAnswer: Error {
        let json: String
    }

    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        let plan = try ModifyRecordsPlan(field, request: executor.request)
        if plan.refusesWholeBatch {
            return try plan.response(plan.outcome(written: nil), records: [:])
        }
        let logger = executor.logger
        let requestID = executor.requestID
        let location = executor.request.location(of: field.field)
        do {
            return try await executor.database.withUser(try executor.signedInUser(), device: executor.device, logger: logger) { connection in
                let written = try await connection.execute(plan.writeQuery, logger: logger).first.map(ModifyRecordsPlan.decodeWritten)
                guard let written, written.zoneFound, let raw = written.result else { throw QueryError.zoneNotFound(at: location) }
                let failures = raw.errors.map { error -> ModifyRecordsPlan.RecordFailure in
                    if let code = error.code {
                        return .init(recordName: error.recordName, code: code, message: error.message, serverRecordID: error.serverRecordId)
                    }
                    let mapped = APIError.fromDatabase(sqlState: error.sqlstate ?? "XX000", message: error.message, requestID: requestID, logger: logger)
                    return .init(recordName: error.recordName, code: mapped.code, message: mapped.message)
                }
                let outcome = plan.outcome(written: .init(saved: raw.saved, deleted: raw.deleted, failures: failures))
                let ids = outcome.saved + outcome.failures.compactMap(\.serverRecordID)
                var records: [Int64: (saved: String?, server: String?)] = [:]
                if !ids.isEmpty {
                    for row in try await connection.execute(plan.readQuery(ids: ids), logger: logger) {
                        let record = try ModifyRecordsPlan.decodeRecord(row)
                        records[record.id] = (record.saved, record.server)
                    }
                }
                let json = try plan.response(outcome, records: records)
                if plan.atomic && !outcome.failures.isEmpty {
                    throw RollbackAndAnswer(json: json)
                }
                return json
            }
        } catch let answer as RollbackAndAnswer {
            return answer.json
        }
    }
}

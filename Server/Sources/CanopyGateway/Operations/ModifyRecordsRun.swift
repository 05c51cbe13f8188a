import CanopyPlanner
import CanopyRequestStore
import Foundation
import Logging

/// A ``ModifyRecordsPlan`` written: the batch in one transaction under the
/// zone's lock, the saved records (and the server records of conflicts)
/// rendered as the plan asks, by the writing statement itself where the plan
/// can (``ModifyRecordsPlan/rendersInWrite``), else read back in the same
/// transaction; the answer is made after COMMIT, and an atomic batch with a
/// failure rolls back and still answers. One path
/// for GraphQL's `modifyRecords` and Web Services' `records/modify`, both
/// through ``PlanRunner/modify(_:requestID:zoneMissing:answer:)``.
enum ModifyRecordsRun {
    /// Thrown inside the transaction to roll it back and still answer.
    struct RollbackAndAnswer<Answer: Sendable>: Error {
        let answer: Answer
    }

    /// Runs the plan as `userID`; `answer` makes the door's answer from the
    /// outcome and the records read back (id → saved, server record).
    static func run<Answer: Sendable>(
        _ plan: ModifyRecordsPlan, database: RequestDatabase, userID: Int64, device: String?, requestID: String,
        logger: Logger, zoneMissing: QueryError,
        answer: @escaping @Sendable (ModifyRecordsPlan.Outcome, [Int64: ModifyRecordsPlan.ReadBack]) throws -> Answer
    ) async throws -> Answer {
        PlanOutcome.uncached.count()
        CanopySpan.current?.updateAttributes { attributes in
            attributes["canopy.plan"] = "ModifyRecordsPlan"
            attributes["canopy.plan.writes"] = true
        }
        if plan.refusesWholeBatch {
            return try answer(plan.outcome(written: nil), [:])
        }
        do {
            let (outcome, records) = try await database.withUser(userID, device: device, logger: logger) { connection in
                let written = try ModifyRecordsPlan.decodeWritten(try await connection.execute(plan.writeQuery, as: userID, logger: logger))
                guard written.zoneFound, let raw = written.result else { throw zoneMissing }
                let failures = raw.errors.map { error -> ModifyRecordsPlan.RecordFailure in
                    if let code = error.code {
                        return .init(recordName: error.recordName, code: code, message: error.message, serverRecordID: error.serverRecordId)
                    }
                    let mapped = APIError.fromDatabase(sqlState: error.sqlstate ?? "XX000", message: error.message, requestID: requestID, logger: logger)
                    return .init(recordName: error.recordName, code: mapped.code, message: mapped.message)
                }
                let outcome = plan.outcome(written: .init(saved: raw.saved, deleted: raw.deleted, failures: failures))
                var records = written.records
                let ids = outcome.saved + outcome.failures.compactMap(\.serverRecordID)
                if !plan.rendersInWrite && !ids.isEmpty {
                    for row in try await connection.execute(plan.readQuery(ids: ids), as: userID, logger: logger) {
                        let record = try ModifyRecordsPlan.decodeRecord(row)
                        records[record.id] = (record.name, record.saved, record.server)
                    }
                }
                if plan.atomic && !outcome.failures.isEmpty {
                    // Rolled back: the answer is made here, inside, and still given.
                    throw RollbackAndAnswer(answer: try answer(outcome, records))
                }
                return (outcome, records)
            }
            // Made after COMMIT: the zone's lock is not held while the
            // answer is written (issue 51).
            return try answer(outcome, records)
        } catch let rolledBack as RollbackAndAnswer<Answer> {
            return rolledBack.answer
        }
    }
}

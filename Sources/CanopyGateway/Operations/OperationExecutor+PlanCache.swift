import CanopyPlanner
import CanopyRequestStore

/// A plan the cache can keep: made recording, it gives its statement's template.
protocol TemplatedPlan: FieldPlan {
    var template: StatementTemplate? { get }
}

extension RecordsPlan: TemplatedPlan {}
extension LookupPlan: TemplatedPlan {}

extension OperationExecutor {
    /// Runs a checked request's plan through the plan cache: a hit binds
    /// the request's values into the statement made before (`replay`), a
    /// miss plans `recording` and keeps its template. `cold` plans anew
    /// (without the cache, verifying a hit, or after a mismatch).
    func runCached<Plan: TemplatedPlan>(
        _ key: PlanCache.Key, operation: PlanCache.Operation, recordType: String?,
        replay: (StatementTemplate) throws -> Plan, recording: () throws -> Plan, cold: () throws -> Plan
    ) async throws -> String? {
        let plans = recordSchemas.plans
        guard plans.isEnabled else { return try await run(try cold()) }
        if let entry = plans.entry(key, operation: operation) {
            if let plan = try plans.replayed({ try replay(entry.template) }, cold: cold, logger: logger) {
                return try await run(plan, prepared: entry.prepared)
            }
            return try await run(try cold())
        }
        let plan = try recording()
        guard let template = plan.template else { return try await run(plan) }
        let entry = PlanCache.Entry(
            template: template, prepared: PreparedRead(sql: template.sql, parameterTypes: template.parameterTypes), recordType: recordType
        )
        plans.insert(key, entry)
        return try await run(plan, prepared: entry.prepared)
    }
}

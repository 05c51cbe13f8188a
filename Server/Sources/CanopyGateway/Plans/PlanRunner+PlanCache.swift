import CanopyPlanner
import CanopyRequestStore
import Tracing

/// A plan the cache can keep: made recording, it gives its statement's template.
protocol TemplatedPlan: FieldPlan {
    var template: StatementTemplate? { get }
}

extension RecordsPlan: TemplatedPlan {}
extension LookupPlan: TemplatedPlan {}

extension PlanRunner {
    /// Runs a checked request's plan through the plan cache: a hit binds
    /// the request's values into the statement made before (`replay`), a
    /// miss plans `recording` and keeps its template. `cold` plans anew
    /// (without the cache, verifying a hit, or after a mismatch).
    func runCached<Plan: TemplatedPlan>(
        _ key: PlanCache.Key, operation: PlanCache.Operation, recordType: String?,
        replay: (StatementTemplate) throws -> Plan, recording: () throws -> Plan, cold: () throws -> Plan
    ) async throws -> String? {
        let (plan, row) = try await rowCached(key, operation: operation, recordType: recordType, replay: replay, recording: recording, cold: cold)
        return try plan.answer(row)
    }

    /// As ``runCached(_:operation:recordType:replay:recording:cold:)``, but
    /// answers the plan with its row, for an answer made from both (a
    /// records query's page and its cursor).
    func rowCached<Plan: TemplatedPlan>(
        _ key: PlanCache.Key, operation: PlanCache.Operation, recordType: String?,
        replay: (StatementTemplate) throws -> Plan, recording: () throws -> Plan, cold: () throws -> Plan
    ) async throws -> (Plan, Plan.Row?) {
        // Planning (no I/O) in a span of its own when traced, saying
        // whether the cache had the statement.
        let (plan, prepared, outcome) = try CanopySpan.run("plan") { span -> (Plan, PreparedRead?, PlanOutcome) in
            let (plan, prepared, outcome) = try planCached(key, operation: operation, recordType: recordType, replay: replay, recording: recording, cold: cold)
            span?.updateAttributes { attributes in
                attributes["canopy.plan"] = "\(Plan.self)"
                attributes["canopy.plan.cache"] = outcome.rawValue
            }
            return (plan, prepared, outcome)
        }
        return (plan, try await row(plan, prepared: prepared, outcome: outcome))
    }

    /// The plan, its prepared statement when cached, and what the cache did.
    private func planCached<Plan: TemplatedPlan>(
        _ key: PlanCache.Key, operation: PlanCache.Operation, recordType: String?,
        replay: (StatementTemplate) throws -> Plan, recording: () throws -> Plan, cold: () throws -> Plan
    ) throws -> (Plan, PreparedRead?, PlanOutcome) {
        let plans = recordSchemas.plans
        guard plans.isEnabled else { return (try cold(), nil, .off) }
        if let entry = plans.entry(key, operation: operation) {
            if let plan = try plans.replayed({ try replay(entry.template) }, cold: cold, logger: logger) {
                return (plan, entry.prepared, .hit)
            }
            return (try cold(), nil, .replanned)
        }
        let plan = try recording()
        guard let template = plan.template else { return (plan, nil, .uncacheable) }
        let entry = PlanCache.Entry(
            template: template, prepared: PreparedRead(sql: template.sql, parameterTypes: template.parameterTypes), recordType: recordType
        )
        plans.insert(key, entry)
        return (plan, entry.prepared, .miss)
    }
}

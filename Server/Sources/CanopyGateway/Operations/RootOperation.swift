import CanopyPlanner

/// One root field the gateway serves. Most are a ``FieldPlan`` run as it
/// is (``Planned``); the few that need I/O before planning or more than one
/// statement have a type of their own in this folder.
protocol RootOperation: Sendable {
    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String?
}

/// A field answered by one plan's one statement.
struct Planned<Plan: FieldPlan>: RootOperation {
    let plan: @Sendable (SelectedField, ParsedRequest) throws -> Plan

    func resolve(_ field: SelectedField, _ executor: OperationExecutor) async throws -> String? {
        try await executor.run(try plan(field, executor.request))
    }
}

import CanopyEncoding
import CanopyPlanner
import CanopyRequestStore
import CanopyWAL
import Foundation
import GraphQL
import Logging
import PostgresNIO

/// Runs one root field of an operation, the same way for every field: finds
/// its ``RootOperation`` in ``OperationTable`` by name, which builds a plan
/// (no I/O) and runs its statements acting for the caller, and returns the
/// field's JSON text.
struct OperationExecutor {
    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let recordSchemas: RecordSchemas
    let request: ParsedRequest
    /// The caller; nil for a request without a token, which reaches only
    /// the public database's reads (``AnonymousAccess``).
    let userID: Int64?
    let requestID: String
    let logger: Logger
    /// The position the client says it has seen (`Canopy-Position`): reads
    /// that a replica may answer need a replica that has replayed it.
    var readAfter: WALPosition? = nil
    /// The device the request comes from (`Canopy-Device`): writes name it
    /// to the push outbox, so it is not told of its own change.
    var device: String? = nil

    func resolve(_ field: SelectedField) async throws -> String? {
        let kind = request.operation.operation
        if field.name == "__typename" {
            return GraphQLResponse.quoted(kind == .mutation ? "Mutation" : "Query")
        }
        guard kind != .subscription else {
            throw APIError(.badRequest, "subscriptions are served over WebSocket at /graphql with the graphql-transport-ws protocol")
        }
        guard let operation = OperationTable.operation(kind, named: field.name) else {
            throw APIError(.badRequest, "\(field.name) is part of the API contract but not served by this build of Canopy yet")
        }
        // A span per root field (when traced): its plan and database calls are its children.
        return try await CanopySpan.run("graphql \(field.name)") { span in
            span?.updateAttributes { attributes in
                attributes["graphql.operation.type"] = kind.rawValue
                attributes["canopy.operation"] = field.name
            }
            return try await operation.resolve(field, self)
        }
    }

    /// The runner of this request's plans, the one Web Services' endpoints
    /// use too (``PlanRunner``): the caller, its device and position, the
    /// plan cache and the spans' plan attributes.
    var runner: PlanRunner {
        PlanRunner(database: database, recordSchemas: recordSchemas, userID: userID, logger: logger, readAfter: readAfter, device: device)
    }

    /// Runs a plan's statement (a read on the pool, a write in a transaction
    /// acting for the caller) and makes the field's JSON from its row.
    func run<Plan: FieldPlan>(_ plan: Plan, prepared: PreparedRead? = nil) async throws -> String? {
        try await runner.run(plan, prepared: prepared)
    }

    /// The caller, for what only a signed-in caller may do (every write).
    func signedInUser() throws -> Int64 {
        try runner.signedInUser()
    }

    /// Runs a read in one round trip, acting for the caller.
    func read<T: Sendable>(
        _ statement: SQLStatement, from source: RequestDatabase.ReadSource = .primary,
        _ collect: @escaping @Sendable ([PostgresRow]) throws -> T
    ) async throws -> T {
        try await runner.read(statement, from: source, collect)
    }

    /// Runs a checked request's plan through the plan cache (``PlanRunner/runCached(_:operation:recordType:replay:recording:cold:)``).
    func runCached<Plan: TemplatedPlan>(
        _ key: PlanCache.Key, operation: PlanCache.Operation, recordType: String?,
        replay: (StatementTemplate) throws -> Plan, recording: () throws -> Plan, cold: () throws -> Plan
    ) async throws -> String? {
        try await runner.runCached(key, operation: operation, recordType: recordType, replay: replay, recording: recording, cold: cold)
    }

    /// Runs `body`, pointing a `QueryError` it throws at `field` (a token
    /// found expired only once the page was read, say).
    func located<T>(at field: SelectedField, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as QueryError {
            error.locations = request.location(of: field.field)
            throw error
        }
    }
}

import CanopyPlanner
import CanopyRequestStore
import CanopyWAL
import Logging
import PostgresNIO

/// Runs plans for one request's caller: the one runner both doors use
/// (GraphQL's ``OperationExecutor`` and every Web Services endpoint), so
/// that a request through either reaches the database the same way. It
/// owns who is asking (the user, and the device a write names to the push
/// outbox), where a read may go (a replica that has replayed the client's
/// `Canopy-Position`, else the primary), the plan cache
/// (``runCached(_:operation:recordType:replay:recording:cold:)``), the
/// plan's span attributes, and the keys cursors and change tokens are
/// sealed with.
struct PlanRunner: Sendable {
    let database: RequestDatabase
    let recordSchemas: RecordSchemas
    /// The caller; nil for a request without a token, which reaches only
    /// the public database's reads (``AnonymousAccess``).
    let userID: Int64?
    let logger: Logger
    /// The position the client says it has seen (`Canopy-Position`): reads
    /// that a replica may answer need a replica that has replayed it.
    var readAfter: WALPosition? = nil
    /// The device the request comes from (`Canopy-Device`): writes name it
    /// to the push outbox, so it is not told of its own change.
    var device: String? = nil

    /// Runs a plan's statement (a read on the pool or a replica, a write in
    /// a transaction acting for the caller) and decodes its row, counting
    /// what planning did (`outcome`: planned here, unless the plan cache
    /// says otherwise).
    func row<Plan: FieldPlan>(_ plan: Plan, prepared: PreparedRead? = nil, outcome: PlanOutcome = .uncached) async throws -> Plan.Row? {
        outcome.count()
        CanopySpan.current?.updateAttributes { attributes in
            attributes["canopy.plan"] = "\(Plan.self)"
            attributes["canopy.plan.writes"] = Plan.writes
        }
        if Plan.writes {
            return try await writing(plan.statement) { rows in try rows.first.map(Plan.decode) }
        }
        let source: RequestDatabase.ReadSource = Plan.readsReplicas ? .replica(after: nil) : .primary
        if let prepared {
            let statement = try await database.bindingOwners(of: plan.statement, logger: logger)
            return try await database.read(prepared, binds: statement.binds, as: userID, from: resolved(source), logger: logger) { rows in
                try rows.first.map(Plan.decode)
            }
        }
        return try await reading(plan.statement, from: source) { rows in try rows.first.map(Plan.decode) }
    }

    /// Runs a plan and makes its answer's JSON from its row (GraphQL's field).
    func run<Plan: FieldPlan>(_ plan: Plan, prepared: PreparedRead? = nil) async throws -> String? {
        try plan.answer(try await row(plan, prepared: prepared))
    }

    /// Runs a read in one round trip, acting for the caller. A replica read
    /// waits for the later of `after` and what the client has seen.
    func read<T: Sendable>(
        _ statement: SQLStatement, from source: RequestDatabase.ReadSource = .primary,
        _ collect: @escaping @Sendable ([PostgresRow]) throws -> T
    ) async throws -> T {
        PlanOutcome.uncached.count()
        return try await reading(statement, from: source, collect)
    }

    /// Runs a writing statement in a transaction acting for the caller and
    /// naming its device.
    func write<T: Sendable>(_ statement: SQLStatement, _ collect: @escaping @Sendable ([PostgresRow]) throws -> T) async throws -> T {
        PlanOutcome.uncached.count()
        return try await writing(statement, collect)
    }

    private func reading<T: Sendable>(
        _ statement: SQLStatement, from source: RequestDatabase.ReadSource, _ collect: @escaping @Sendable ([PostgresRow]) throws -> T
    ) async throws -> T {
        try await database.read(statement, as: userID, from: resolved(source), logger: logger, collect)
    }

    private func writing<T: Sendable>(_ statement: SQLStatement, _ collect: @escaping @Sendable ([PostgresRow]) throws -> T) async throws -> T {
        let userID = try signedInUser(), logger = self.logger
        return try await database.withUser(userID, device: device, logger: logger) { connection in
            try collect(try await connection.execute(statement, as: userID, logger: logger))
        }
    }

    /// The caller, for what only a signed-in caller may do (every write).
    func signedInUser() throws -> Int64 {
        guard let userID else { throw APIError(.notAuthenticated, "sign in first: only the public database's reads are open without a token") }
        return userID
    }

    /// What the client has now seen, for the answer's `Canopy-Position`
    /// (to send back, on any gateway); nil without replicas, or when no
    /// position could be read (sent back, a stand-in would keep the client
    /// on the primary for good).
    var positionSeen: WALPosition? {
        guard let replicas = database.replicas,
              let position = readAfter.later(userID.flatMap(replicas.lastWrite(of:))), position != ReplicaSet.unknownPosition
        else { return nil }
        return position
    }

    /// The key records cursors (`continuationMarker`s) are signed with.
    func cursorKey() async throws -> SigningKey {
        let keys = try await database.secrets.keys("cursor", logger: logger)
        return SigningKey(keys.current, accepted: keys.accepted)
    }

    /// The key change tokens are sealed with.
    func changeTokenKey() async throws -> SigningKey {
        let keys = try await database.secrets.keys("change-token", logger: logger)
        return SigningKey(keys.current, accepted: keys.accepted, retired: keys.retired)
    }

    private func resolved(_ source: RequestDatabase.ReadSource) -> RequestDatabase.ReadSource {
        guard case .replica(let after) = source else { return source }
        return .replica(after: after.later(readAfter))
    }
}

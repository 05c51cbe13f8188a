import CanopyEncoding
import CanopyWAL
import Foundation
import Logging
import PostgresNIO
import Tracing

/// Request-time access to PostgreSQL (what the HTTP gateway uses, hence
/// the role's name): a pool of connections as
/// `canopy_gateway` (no BYPASSRLS), and one rule for using them: every
/// request runs in a transaction that first says who is asking with
/// `set_config('canopy.user_id', …, true)`. Row-level security does the rest.
public final class RequestDatabase: Sendable {
    /// The pool (or, for a multi-host URL, the pools) of connections to the
    /// primary, with the timeouts that make a missing database a 503.
    public let primary: PrimaryPool
    /// The primary's pool now; `databaseUnavailable` while there is none.
    public var client: PostgresClient { get throws { try primary.client() } }
    /// Signing keys, fetched from the database once.
    public let secrets: ServerSecrets
    /// Commit notifications for live subscriptions (a service of the app).
    public let notifier: ChangeNotifier
    let logger: Logger
    /// How long a request waits for the database before it is 503.
    let availabilityTimeout: Duration
    /// Looked-up tokens by selector: the user and the stored hashes.
    let tokens: ExpiringCache<String, StoredToken>
    /// Selectors no live token has, remembered as long as found ones
    /// (issue 64): a bad token sent again costs no lookup.
    let unknownTokens: ExpiringCache<String, Bool>
    /// Looked-up container API tokens (`ckAPIToken`) by selector: the
    /// container and the stored hash.
    let containerTokens: ExpiringCache<String, (container: String, hash: [UInt8])>
    /// Looked-up server-to-server keys by identifier.
    let serverKeys: ExpiringCache<String, ServerKey>
    /// Sign-ins already written, for a minute: a person's requests need no
    /// round trip until their claims change (changed claims are another key).
    let signIns = ExpiringCache<SignIn, Int64>(timeToLive: .seconds(60))
    /// Users' ids by record name, for statements that name a zone's owner
    /// by id on Citus (``ownerIDs(named:logger:)``): a record name never
    /// changes and an id is never reused, so an id found stays right.
    let ownerIDsByName = ExpiringCache<String, Int64>(timeToLive: .seconds(600))
    let recordTypes: RecordTypeFields
    /// `production` or `development`: said to the database in every write
    /// transaction (`canopy.schema_mode`), where a trigger refuses undeclared
    /// record types and fields in production.
    public let schemaMode: String
    /// How long a record type's fields are remembered: the gateway's
    /// schemas are kept no longer.
    public let schemaCacheTime: Duration
    /// Streaming replicas that `records`, `lookup` and the feeds may read
    /// from (nil: none; every read goes to the primary).
    public let replicas: ReplicaSet?
    /// The tracer when tracing is on (`canopy serve` with `OTEL_*` set,
    /// docs/TRACING.md): requests carry it to every span below them.
    public let tracing: CanopyTracing?
    /// One PostgreSQL or a Citus coordinator: how a transaction says who
    /// it acts for (``DatabaseEngine``).
    public let engine: DatabaseEngine
    /// The loops requests are served on (`--serve-on-loop`); nil: Swift's
    /// shared pool, as before issue 69.
    public let servingLoops: ServingLoops?

    /// - Parameters:
    ///   - statementTimeout: every statement's limit (`statement_timeout`, set per connection)
    ///   - listenerHeartbeat: how often the change listener's connection is checked (``ChangeNotifier``)
    ///   - tokenCacheTime: how long a looked-up token is remembered (0: never);
    ///     a revoked token keeps working at most this long (docs/API.md §10: 5 s)
    ///   - schemaCacheTime: how long a record type's fields are remembered (0: never)
    ///   - schemaMode: `development` or `production`
    ///   - replicas: streaming replicas of the same database, reached as the same role
    ///   - engine: what `endpoint` is (``DatabaseEngine/detect(on:logger:)``)
    ///   - servingLoops: the loops requests are served on (`--serve-on-loop`), each
    ///     given a pool of `loopConnections` to the primary; nil: one shared pool
    public init(
        endpoint: DatabaseEndpoint, maximumConnections: Int = 20, availabilityTimeout: Duration = .seconds(5),
        statementTimeout: Duration = .seconds(10), listenerHeartbeat: Duration = .seconds(5), tokenCacheTime: Duration = .seconds(4),
        schemaCacheTime: Duration = .seconds(1), schemaMode: String = "development",
        replicas: [DatabaseEndpoint] = [], replicaSettings: ReplicaSet.Settings = .init(), tracing: CanopyTracing? = nil,
        engine: DatabaseEngine = .postgres, servingLoops: ServingLoops? = nil, loopConnections: Int = 2, logger: Logger
    ) throws {
        if engine == .citus && !replicas.isEmpty {
            throw StoreError(
                .invalidConfiguration,
                "read replicas are not supported on Citus yet: each worker would need its own (docs/CITUS.md); remove --replica-url"
            )
        }
        self.engine = engine
        self.tracing = tracing
        let milliseconds = statementTimeout.components.seconds * 1000 + statementTimeout.components.attoseconds / 1_000_000_000_000_000
        // The asset marker (sql/functions/asset_marks.sql): what the SQL marks
        // as an asset is all the URL signer trusts (issue 64).
        let startupParameters = [("statement_timeout", String(max(1, milliseconds))), (AssetMarker.setting, AssetMarker.prefix)]
        self.tokens = ExpiringCache(timeToLive: tokenCacheTime)
        self.unknownTokens = ExpiringCache(timeToLive: tokenCacheTime)
        self.containerTokens = ExpiringCache(timeToLive: tokenCacheTime)
        self.serverKeys = ExpiringCache(timeToLive: tokenCacheTime)
        self.primary = try PrimaryPool(
            endpoint: endpoint,
            configure: { configuration in
                configuration.options.maximumConnections = maximumConnections
                configuration.options.connectTimeout = availabilityTimeout
                configuration.options.additionalStartupParameters = startupParameters
            },
            availabilityTimeout: availabilityTimeout, statementTimeout: statementTimeout,
            loops: servingLoops, loopConnections: loopConnections, logger: logger
        )
        self.servingLoops = servingLoops
        self.secrets = ServerSecrets(primary: primary)
        self.notifier = ChangeNotifier(
            primary: primary, heartbeat: listenerHeartbeat, citusEndpoint: engine == .citus ? endpoint : nil, logger: logger
        )
        self.recordTypes = RecordTypeFields(primary: primary, maximumAge: schemaCacheTime)
        self.schemaCacheTime = schemaCacheTime
        self.schemaMode = schemaMode
        self.logger = logger
        self.availabilityTimeout = availabilityTimeout
        self.replicas = replicas.isEmpty ? nil : try ReplicaSet(
            primary: primary, endpoints: replicas, maximumConnections: maximumConnections, connectTimeout: availabilityTimeout,
            startupParameters: startupParameters, settings: replicaSettings, loops: servingLoops, loopConnections: loopConnections, logger: logger
        )
    }

    /// Who a person's token (`cnp_…` or a web auth token) belongs to, or nil for an unknown or malformed
    /// token. The stored hash is compared here, in constant time.
    public func authenticate(token: String, logger: Logger) async throws -> Int64? {
        try await presentedToken(token, logger: logger)?.userID
    }

    /// A person's token as presented: whose it is, and whether its secret
    /// is the current one or the one a rotation replaced (issue 66: it
    /// holds for the rotation's overlap). nil for an unknown, revoked or
    /// malformed token, or a secret that is neither.
    public func presentedToken(_ token: String, logger: Logger) async throws -> PresentedToken? {
        guard let presented = BearerToken(parsingPersonal: token) else { return nil }
        let cached = tokens.value(for: presented.selector)
        if let cached, let match = cached.match(presented.secretHash) { return match }
        // Not cached, or cached with other secrets: the token may have
        // rotated on another gateway since, so the database says.
        if cached == nil, unknownTokens.value(for: presented.selector) != nil { return nil }
        let rows = try await CanopySpan.run("db token lookup", ofKind: .client) { span in
            span?.describeDatabaseCall(server: try? primary.server(), deadlines: primary.deadlines)
            return try await primary.withConnection { connection in
                try await connection.query(
                    """
                    SELECT user_id, secret_hash, previous_secret_hash, secret_age
                      FROM canopy.token_secrets_for_selector(\(presented.selector)) WHERE user_id IS NOT NULL
                    """,
                    logger: logger
                ).collect()
            }
        }
        guard let (userID, storedHash, previousHash, age) = try rows.first?.decode((Int64, Data, Data?, Double).self) else {
            unknownTokens.store(true, for: presented.selector)
            return nil
        }
        // The database's age on this gateway's clock, which the rotation's
        // check reads (the two clocks need not agree).
        let stored = StoredToken(userID: userID, hash: Array(storedHash), previousHash: previousHash.map(Array.init),
                                 secretSince: Date().addingTimeInterval(-age))
        tokens.store(stored, for: presented.selector)
        guard let match = stored.match(presented.secretHash) else { return nil }
        // `canopy users tokens` shows when a token was last used; off the
        // request's path, and at most a write a minute (the function checks).
        Task { [primary, selector = presented.selector] in
            _ = try? await primary.withConnection { connection in
                try await connection.query("SELECT canopy.note_token_use(\(selector))", logger: logger).collect()
            }
        }
        return match
    }

    /// Forgets what this gateway remembered of a token (its selector), so a
    /// revocation made through it holds here from its answer on: sign-out
    /// resolves once the token no longer works on this gateway. Other
    /// gateways let go within the token cache's time (4 s).
    public func forgetToken(selector: String) {
        tokens.remove(selector)
    }

    /// The user of a verified identity-provider token: found by (issuer,
    /// subject), or created with its `_defaultZone` on the first sign-in
    /// (once, however many first requests race; `canopy.sign_in`).
    public func userID(signingIn signIn: SignIn, logger: Logger) async throws -> Int64 {
        if let cached = signIns.value(for: signIn) { return cached }
        let (userID, position): (Int64, WALPosition?) = try await CanopySpan.run("db sign in", ofKind: .client) { [primary, replicas] span in
          span?.describeDatabaseCall(server: try? primary.server(), deadlines: primary.deadlines)
          return try await primary.withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT canopy.sign_in(\(signIn.issuer), \(signIn.subject), \(signIn.provider), \(signIn.displayName), \(signIn.email), \(signIn.phone))
                """,
                logger: logger
            ).collect()
            guard let id = try rows.first?.decode(Int64.self) else { throw StoreError(.query, "canopy.sign_in returned no user") }
            // A first sign-in made the user: their reads must see it.
            return (id, replicas == nil ? nil : try? await ReplicaSet.position(on: connection, logger: logger))
          }
        }
        if let replicas { replicas.noteWrite(by: userID, at: position) }
        signIns.store(userID, for: signIn)
        return userID
    }

    /// Runs `body` in one transaction acting for `userID` (for writes).
    /// With replicas, the commit's position is then read on the same
    /// connection and remembered as the user's last write, so their reads
    /// come from a replica only once it has replayed it.
    ///
    /// `device` (a `Canopy-Device` ID) goes to the push outbox of what the
    /// transaction changes (canopy.touch_zone), so that device is not told.
    /// `changesZones: false` says the body changes no zone's records (an
    /// upload): on Citus nothing is announced at its end, where the read of
    /// the caller's zones would follow a definer's write to their shards
    /// and be refused ("placements that were modified in this transaction
    /// by a different user", DECISIONS 176).
    public func withUser<Result: Sendable>(
        _ userID: Int64,
        device: String? = nil,
        changesZones: Bool = true,
        logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let watch = CommitWatch()
        do {
            return try await CanopySpan.run("db transaction", ofKind: .client) { span in
                span?.describeDatabaseCall(server: try? primary.server(), deadlines: primary.deadlines)
                return try await CommitWatch.$current.withValue(watch) {
                    try await writeTransaction(userID, device: device, changesZones: changesZones, logger: logger, body)
                }
            }
        } catch where watch.mayHaveCommitted && Self.leavesCommitUnknown(error) {
            throw StoreError(
                .commitOutcomeUnknown,
                "the database stopped answering after this write's COMMIT was sent: it may or may not have been saved; read it back, or send it again (a save of the same record with its old change tag is then answered with a conflict if it was saved)",
                underlying: error
            )
        }
    }

    /// Whether a failure after COMMIT was sent leaves its outcome unknown:
    /// the connection or the server went away, or the deadline passed. An
    /// error the server answered (a constraint, a serialization failure) is
    /// an answer: nothing was committed.
    static func leavesCommitUnknown(_ error: any Error) -> Bool {
        error is CancellationError || PrimaryPool.meansNoPrimary(error) || PostgresErrors.isConnectionFailure(error)
    }

    private func writeTransaction<Result: Sendable>(
        _ userID: Int64, device: String?, changesZones: Bool, logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await primary.withConnection { connection in
            let result = try await connection.inTransaction(logger: logger) { connection in
                // A traced write names its trace to the push outbox, so
                // webhooks for it carry the trace on (docs/TRACING.md).
                if self.engine == .citus {
                    // Carried to the workers (DatabaseEngine); the caller's
                    // shards held where they are until the end, as each
                    // statement's other owners will be (CitusWriteOwners).
                    _ = try await connection.query(
                        "SELECT canopy.act_as(\(userID), \(self.schemaMode), \(device), \(CanopySpan.traceParent)), canopy.hold_placements(\([userID]))",
                        logger: logger
                    ).collect()
                    let owners = CitusWriteOwners(caller: userID)
                    let result = try await CitusWriteOwners.$current.withValue(owners) { try await body(connection) }
                    // The workers' triggers do not NOTIFY: the coordinator
                    // announces, last, what they changed (DECISIONS 172).
                    if changesZones {
                        try await owners.announce(on: connection, logger: logger)
                    }
                    return result
                }
                if let traceParent = CanopySpan.traceParent {
                    try await connection.query("SELECT set_config('canopy.trace_parent', \(traceParent), true)", logger: logger)
                }
                if let device {
                    try await connection.query(
                        "SELECT set_config('canopy.user_id', \(String(userID)), true), set_config('canopy.schema_mode', \(self.schemaMode), true), set_config('canopy.device_id', \(device), true)",
                        logger: logger
                    )
                } else {
                    try await connection.query(
                        "SELECT set_config('canopy.user_id', \(String(userID)), true), set_config('canopy.schema_mode', \(self.schemaMode), true)",
                        logger: logger
                    )
                }
                return try await body(connection)
            }
            if let replicas = self.replicas {
                replicas.noteWrite(by: userID, at: try? await ReplicaSet.position(on: connection, logger: logger))
            }
            return result
        }
    }

    /// Where a read may run.
    public enum ReadSource: Sendable {
        /// The primary: what must see the newest state (sharing, schema, tokens).
        case primary
        /// A replica that has replayed `after` and the caller's own last
        /// write here, or the primary (`records`, `lookup`, change feeds).
        case replica(after: WALPosition?)
    }

    /// Runs one read-only statement acting for `userID` in one round trip:
    /// the identity is set by the statement itself, before anything it
    /// reads (a one-row outer side that a lateral join depends on), and ends
    /// with it (`is_local` in the statement's own transaction). Were the
    /// order ever different, the reads would see nobody's rows, not another
    /// user's: `canopy.current_user_id()` is NULL until set.
    ///
    /// The statement is prepared by its shape (``StatementShapes``): the
    /// user is a parameter like any other value, so one shape serves all.
    /// A nil user is nobody (a browser opening a share URL).
    public func read<Result: Sendable>(
        _ statement: PostgresQuery, parameterTypes: [PostgresDataType], as userID: Int64?, from source: ReadSource = .primary,
        logger: Logger, _ collect: @escaping @Sendable ([PostgresRow]) throws -> Result
    ) async throws -> Result {
        let prepared = PreparedRead(sql: statement.sql, parameterTypes: parameterTypes, numbered: false)
        return try await read(prepared, binds: statement.binds, as: userID, from: source, logger: logger, collect)
    }

    /// ``read(_:parameterTypes:as:from:logger:_:)`` of a statement whose
    /// identity wrapping and shape number were made before (the plan
    /// cache's entries keep one): only its values are bound.
    public func read<Result: Sendable>(
        _ prepared: PreparedRead, binds statementBinds: PostgresBindings, as userID: Int64?, from source: ReadSource = .primary,
        logger: Logger, _ collect: @escaping @Sendable ([PostgresRow]) throws -> Result
    ) async throws -> Result {
        if engine == .citus {
            return try await CanopySpan.run("db read", ofKind: .client) { span in
                span?.describeDatabaseCall(server: try? primary.server(), deadlines: primary.deadlines, source: "primary")
                let rows = try await citusRead(prepared, binds: statementBinds, as: userID, logger: logger)
                span?.attributes["db.response.returned_rows"] = rows.count
                return try collect(rows)
            }
        }
        var binds = statementBinds
        binds.append(userID)
        let query = PostgresQuery(unsafeSQL: prepared.sql, binds: binds)
        guard ServiceContext.current?.isCanopyTraced == true else {
            return try await read(query, prepared: prepared, as: userID, from: source, logger: logger, span: nil, collect)
        }
        return try await CanopySpan.run("db read", ofKind: .client) { span in
            try await read(query, prepared: prepared, as: userID, from: source, logger: logger, span: span, collect)
        }
    }

    private func read<Result: Sendable>(
        _ query: PostgresQuery, prepared: PreparedRead, as userID: Int64?, from source: ReadSource,
        logger: Logger, span: (any Span)?, _ collect: @escaping @Sendable ([PostgresRow]) throws -> Result
    ) async throws -> Result {
        let types = prepared.parameterTypes
        if case .replica(let after) = source, let replicas {
            let required = after.later(userID.flatMap(replicas.lastWrite(of:)))
            if let replica = await replicas.replica(after: required, logger: logger) {
                span?.describeDatabaseCall(server: replica.name, deadlines: (.seconds(1), primary.answerTimeout), source: "replica")
                let rows: [PostgresRow]?
                do {
                    // A replica gets a second for a connection: the primary is there to answer instead.
                    rows = try await replica.readClient.withConnection(within: .seconds(1), answerWithin: primary.answerTimeout) { connection in
                        try await connection.executeShaped(query, parameterTypes: types, number: prepared.number, logger: logger)
                    }
                } catch where ReplicaSet.isReplicaFault(error) {
                    replicas.takeOut(replica, because: error)
                    span?.addEvent(SpanEvent(name: "replica taken out; reading from the primary"))
                    rows = nil
                }
                if let rows {
                    span?.attributes["db.response.returned_rows"] = rows.count
                    return try collect(rows)
                }
            } else {
                span?.attributes["canopy.db.replica_skipped"] = "no replica up that has replayed the caller's position"
            }
        }
        span?.describeDatabaseCall(server: try? primary.server(), deadlines: primary.deadlines, source: "primary")
        let rows = try await primary.withConnection { connection in
            try await connection.executeShaped(query, parameterTypes: types, number: prepared.number, logger: logger)
        }
        span?.attributes["db.response.returned_rows"] = rows.count
        return try collect(rows)
    }

    /// A read on Citus: the read alone, in a transaction that says who it
    /// acts for first by `canopy.act_as` (SET LOCAL, which Citus carries to
    /// the workers that hold the shards; ``DatabaseEngine``). Read only, so
    /// a failure after it is no unknown commit.
    private func citusRead(
        _ prepared: PreparedRead, binds: PostgresBindings, as userID: Int64?, logger: Logger
    ) async throws -> [PostgresRow] {
        var binds = binds
        binds.append(userID)  // the read may name its caller (SQLBuilder.caller())
        let read = PostgresQuery(unsafeSQL: prepared.read, binds: binds)
        return try await primary.withConnection { connection in
            try await connection.query("BEGIN READ ONLY", logger: logger)
            do {
                try await connection.query("SELECT canopy.act_as(\(userID), NULL, NULL, NULL)", logger: logger)
                let rows = try await connection.executeShaped(read, parameterTypes: prepared.readTypes + [.int8], logger: logger)
                try await connection.query("COMMIT", logger: logger)
                return rows
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// A record type's fields with their indexes; `refresh` reads them anew,
    /// for a field that was not known yet.
    public func fieldTypes(of recordType: String, refresh: Bool = false, logger: Logger) async throws -> [String: StoredField] {
        try await recordTypes.fields(of: recordType, refresh: refresh, logger: logger)
    }

    /// True when the database answers.
    public func isHealthy(logger: Logger) async -> Bool {
        do {
            return try await primary.withConnection { connection in
                try await connection.query("SELECT 1", logger: logger)
                return true
            }
        } catch {
            return false
        }
    }
}

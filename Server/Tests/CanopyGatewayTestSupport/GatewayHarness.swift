import CanopyAdmin
import CanopyGateway
import CanopyIdentity
import CanopyOutbound
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import Testing

/// Log lines a test can read back: the gateway logs through this, so a test
/// can prove what never appears in a log.
final class CapturedLogs: Sendable {
    private let lines = NIOLockedValueBox<[String]>([])

    var text: String { lines.withLockedValue { $0.joined(separator: "\n") } }

    func logger() -> Logger {
        var logger = Logger(label: "canopy.test") { _ in CapturingHandler(logs: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ line: String) {
        lines.withLockedValue { $0.append(line) }
    }
}

private struct CapturingHandler: LogHandler {
    let logs: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        logs.append("\(event.level) \(event.message) \(merged)")
    }
}

/// Two users with tokens in a fresh migrated database, and the gateway
/// built exactly as `canopy serve` builds it, run in-process.
struct GatewayHarness: Sendable {
    let endpoint: DatabaseEndpoint
    let alice: UserSummary
    let aliceToken: String
    let bob: UserSummary
    let bobToken: String
    /// How the gateway says who it acts for: `.citus` for a harness on the
    /// Citus tier's cluster (``makeOnCitus()``).
    var engine: DatabaseEngine = .postgres
    let logs = CapturedLogs()

    /// Set (`CANOPY_TEST_GATEWAY_ON_CITUS=1`) when the Citus tier runs the
    /// database tier's gateway suites a second time, on distributed tables
    /// (scripts/test-tier.sh, docs/TESTING.md): ``make()`` then makes a
    /// distributed Citus database.
    static let onDistributedCitus = ProcessInfo.processInfo.environment["CANOPY_TEST_GATEWAY_ON_CITUS"] == "1"

    /// Set (`CANOPY_TEST_SERVE_ON_LOOP=1`) when the on-loop tier runs the
    /// gateway suites serving on the sockets' loops (`--serve-on-loop`,
    /// issue 69): every gateway is then served live (the router mode has
    /// no socket, so no loop).
    static let servingOnLoop = ProcessInfo.processInfo.environment["CANOPY_TEST_SERVE_ON_LOOP"] == "1"

    static func make() async throws -> GatewayHarness {
        if onDistributedCitus { return try await makeOnCitus(distributed: true) }
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, aliceToken) = try await addUser("alice", email: "alice@example.com", on: endpoint)
        let (bob, bobToken) = try await addUser("bob", on: endpoint)
        return GatewayHarness(endpoint: endpoint, alice: alice, aliceToken: aliceToken.string, bob: bob, bobToken: bobToken.string)
    }

    /// The same on the Citus tier's cluster: a database of its own made a
    /// Citus database on every node and migrated there, the gateway on the
    /// Citus engine (identity by `canopy.act_as`, a listener on every node).
    static func makeOnCitus(distributed: Bool = false) async throws -> GatewayHarness {
        let endpoint = try await TestDatabase.shared.migratedCitusDatabase()
        let (alice, aliceToken) = try await addUser("alice", email: "alice@example.com", on: endpoint)
        let (bob, bobToken) = try await addUser("bob", on: endpoint)
        if distributed {
            try await TestDatabase.withConnection(endpoint) { connection in
                try await CitusDistribution.distribute(connection, logger: TestDatabase.logger)
            }
        }
        var harness = GatewayHarness(endpoint: endpoint, alice: alice, aliceToken: aliceToken.string, bob: bob, bobToken: bobToken.string)
        harness.engine = .citus
        return harness
    }

    func test<T: Sendable>(
        configuration: GatewayConfiguration = GatewayConfiguration(),
        gatewayEndpoint: DatabaseEndpoint? = nil,
        live: Bool = false,
        availabilityTimeout: Duration = .seconds(10),
        schemaMode: String = "development",
        identity: TokenVerifier? = nil,
        replicas: [DatabaseEndpoint] = [],
        replicaSettings: ReplicaSet.Settings = .init(),
        rateLimited: Bool = false,
        connectionDeadlines: Bool = false,
        schemaCacheTime: Duration = .seconds(1),
        _ body: @Sendable (any TestClientProtocol) async throws -> T
    ) async throws -> T {
        try await test(configuration: configuration, gatewayEndpoint: gatewayEndpoint, live: live, availabilityTimeout: availabilityTimeout,
                       schemaMode: schemaMode, identity: identity, replicas: replicas, replicaSettings: replicaSettings,
                       rateLimited: rateLimited, connectionDeadlines: connectionDeadlines, schemaCacheTime: schemaCacheTime) { client, _ in
            try await body(client)
        }
    }

    /// The same, also handing the body the gateway's database (its replicas).
    /// Tests drive one user far harder than a person would, so the per-user
    /// rate limit is off unless `rateLimited` (the tests of that limit).
    /// A loaded machine can stall a test's client for seconds between
    /// connecting and speaking, so the connection deadlines (the first
    /// request head's, `connection_init`'s) are ten minutes unless
    /// `connectionDeadlines` (the tests of those deadlines; docs/TESTING.md,
    /// "Under load").
    func test<T: Sendable>(
        configuration: GatewayConfiguration = GatewayConfiguration(),
        gatewayEndpoint: DatabaseEndpoint? = nil,
        live: Bool = false,
        availabilityTimeout: Duration = .seconds(10),
        schemaMode: String = "development",
        identity: TokenVerifier? = nil,
        replicas: [DatabaseEndpoint] = [],
        replicaSettings: ReplicaSet.Settings = .init(),
        rateLimited: Bool = false,
        connectionDeadlines: Bool = false,
        schemaCacheTime: Duration = .seconds(1),
        servingOnLoop: Bool = servingOnLoop,
        _ body: @Sendable (any TestClientProtocol, RequestDatabase) async throws -> T
    ) async throws -> T {
        var configuration = configuration
        // Every plan-cache hit in every test is checked against a plan made anew.
        configuration.planCacheVerification = .strict
        if !rateLimited {
            configuration.limits.requestsPerSecond = 0
            configuration.limits.anonymousRequestsPerSecond = 0
        }
        if !connectionDeadlines {
            configuration.limits.requestHeadTimeout = .seconds(600)
            configuration.limits.webSocketInitialisationTimeout = .seconds(600)
        }
        // No test asks the system's DNS: a name resolves only where a test
        // says where.
        if configuration.outbound.resolver is SystemHostResolver { configuration.outbound.resolver = FixedHostResolver() }
        let logger = logs.logger()
        let database = try RequestDatabase(
            endpoint: gatewayEndpoint ?? endpoint.asUser("canopy_gateway", password: nil),
            maximumConnections: 4, availabilityTimeout: availabilityTimeout,
            statementTimeout: configuration.statementTimeout, schemaCacheTime: schemaCacheTime, schemaMode: schemaMode,
            replicas: replicas, replicaSettings: replicaSettings, engine: engine,
            servingLoops: servingOnLoop ? ServingLoops(group: EventLoopGroupProvider.singleton.eventLoopGroup) : nil, logger: logger
        )
        let app = buildApplication(configuration: configuration, database: database, identity: identity, logger: logger)
        return try await app.test(live || servingOnLoop ? .live : .router) { client in try await body(client, database) }
    }
}

extension TestClientProtocol {
    /// POSTs a GraphQL document; returns the status and the parsed JSON body.
    func graphql(
        _ query: String, variables: [String: Any]? = nil, operationName: String? = nil, token: String?
    ) async throws -> (HTTPResponse.Status, [String: Any]) {
        var payload: [String: Any] = ["query": query]
        if let variables { payload["variables"] = variables }
        if let operationName { payload["operationName"] = operationName }
        let body = try JSONSerialization.data(withJSONObject: payload)
        return try await post(body: ByteBuffer(bytes: body), token: token)
    }

    func post(body: ByteBuffer, token: String?) async throws -> (HTTPResponse.Status, [String: Any]) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let response = try await execute(uri: "/graphql", method: .post, headers: headers, body: body)
        return (response.status, try responseJSON(response.body))
    }

    func get(_ uri: String, token: String?) async throws -> (HTTPResponse.Status, [String: Any], HTTPFields) {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let response = try await execute(uri: uri, method: .get, headers: headers)
        return (response.status, try responseJSON(response.body), response.headers)
    }

}

/// A response body as a JSON object.
func responseJSON(_ buffer: ByteBuffer) throws -> [String: Any] {
    let data = Data(buffer: buffer)
    guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        Issue.record("not a JSON object: \(String(decoding: data, as: UTF8.self))")
        return [:]
    }
    return object
}

/// The first error's `extensions.code`.
func errorCode(_ body: [String: Any]) -> String? {
    ((body["errors"] as? [[String: Any]])?.first?["extensions"] as? [String: Any])?["code"] as? String
}

func firstError(_ body: [String: Any]) -> [String: Any] {
    (body["errors"] as? [[String: Any]])?.first ?? [:]
}

import CanopyGateway
import CanopyStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Synchronization
import Testing

/// Whether Debian's pg_auto_failover is here (make test installs it).
let pgAutoFailoverInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/pg_autoctl")

/// Failover under pg_auto_failover (issue 19, part 4): a monitor and two
/// data nodes on loopback with synchronous replication
/// (`scripts/auto-failover.sh`), and a gateway given the multi-host URL.
/// Eight writers send atomic batches while the primary is killed with
/// `kill -9` (its keeper too, so it does not come back: the machine is
/// lost). Nothing the gateway acknowledged may be lost, nothing may be half
/// there, the gateway answers 503 with `Retry-After` (never hangs past its
/// timeout) while there is no primary, and it follows the new primary
/// without a restart.
@Suite("Failover under pg_auto_failover", .enabled(if: pgAutoFailoverInstalled, "pg_autoctl is not installed (scripts/ensure-auto-failover.sh; make test installs it)"))
struct FailoverTests {
    static let script = "\(TestDatabase.packageRoot)/scripts/auto-failover.sh"
    static let writers = 8
    static let recordsPerBatch = 5
    /// The gateway's bound on waiting for a connection; answers get the
    /// statement timeout (10 s) and 2 s more.
    static let availabilityTimeout = Duration.seconds(2)

    /// What one batch came to.
    enum Outcome: Sendable, Equatable {
        case acknowledged
        case unavailable(retryAfter: Bool)
        case other(String)
    }

    struct Attempt: Sendable {
        var writer: Int
        var batch: Int
        var started: ContinuousClock.Instant
        var took: Duration
        var outcome: Outcome
    }

    @Test("8 writers, the primary killed: every acknowledged batch is on the new primary, none is half there, the gateway answered 503 with Retry-After meanwhile and resumed without a restart")
    func killThePrimary() async throws {
        let directory = "/tmp/canopy-failover-\(UUID().uuidString.prefix(8))"
        let up = try run(Self.script, ["up", directory])
        defer { _ = try? run(Self.script, ["down", directory]); try? FileManager.default.removeItem(atPath: directory) }
        try #require(up.succeeded, "scripts/auto-failover.sh up failed:\n\(up.output)")
        let url = try #require(up.output.split(separator: "\n").last.map(String.init))
        let admin = try DatabaseEndpoint(url: url)
        #expect(admin.hosts.count == 2)

        // Migrate through the multi-host URL (it finds the primary), then two users.
        let connection = try await DatabaseSetup.connect(admin, logger: TestDatabase.logger)
        try await Migrator(directory: TestDatabase.migrationsDirectory, logger: TestDatabase.logger).up(connection: connection)
        try await connection.close()
        let primaryEndpoint = try await primaryHost(of: admin)
        let (alice, aliceToken) = try await addUser("alice", on: primaryEndpoint)
        let (bob, bobToken) = try await addUser("bob", on: primaryEndpoint)
        let harness = GatewayHarness(endpoint: admin, alice: alice, aliceToken: aliceToken.string, bob: bob, bobToken: bobToken.string)
        let token = harness.aliceToken

        let log = Log()
        // A 3 s statement timeout: each database call then ends within 2 s
        // (a connection) + 5 s (an answer), well inside the test client's 20 s.
        try await harness.test(configuration: GatewayConfiguration(statementTimeout: .seconds(3)), live: true,
                               availabilityTimeout: Self.availabilityTimeout) { client in
            for writer in 0..<Self.writers {
                let made = try await client.call("saveZone", "mutation { saveZone(zoneName: \"w\(writer)\") { zoneName } }", token: token)
                #expect(made.code == nil, "\(made.body)")
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<Self.writers {
                    group.addTask {
                        var batch = 0
                        while !log.stop.load(ordering: .relaxed) {
                            let attempt = try await Self.write(batch: batch, writer: writer, client: client, token: token)
                            log.attempts.withLock { $0.append(attempt) }
                            batch += 1
                            if case .unavailable = attempt.outcome { try await Task.sleep(for: .milliseconds(200)) }
                        }
                    }
                }
                group.addTask {
                    defer { log.stop.store(true, ordering: .relaxed) }
                    try await Task.sleep(for: .seconds(2))
                    let killed = try run(Self.script, ["kill-primary", directory])
                    #expect(killed.succeeded, "\(killed.output)")
                    let now = ContinuousClock.now
                    log.killedAt.withLock { $0 = now }
                    // Until writes are acknowledged again (60 s at most), then 2 s more.
                    let deadline = now + .seconds(60)
                    while ContinuousClock.now < deadline {
                        let resumed = log.attempts.withLock { $0.contains { $0.started > now && $0.outcome == .acknowledged } }
                        if resumed { break }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    try await Task.sleep(for: .seconds(2))
                }
                try await group.waitForAll()
            }
        }

        let all = log.attempts.withLock { $0 }
        let killed = try #require(log.killedAt.withLock { $0 })
        let acknowledged = all.filter { $0.outcome == .acknowledged }
        let unavailable = all.filter { if case .unavailable = $0.outcome { return true } else { return false } }
        let others = all.filter { if case .other = $0.outcome { return true } else { return false } }
        let resumedAt = all.filter { $0.started > killed && $0.outcome == .acknowledged }.map { $0.started + $0.took }.min()
        let lastBefore = all.filter { $0.outcome == .acknowledged && $0.started + $0.took <= killed }.map { $0.started + $0.took }.max()
        let unavailableFor = resumedAt.map { resumed in resumed - (lastBefore ?? killed) }
        print("""
            failover: \(all.count) batches, \(acknowledged.count) acknowledged, \(unavailable.count) answered 503, \(others.count) other; \
            writes resumed \(resumedAt.map { "\($0 - killed)" } ?? "never") after the kill; \
            no acknowledged write for \(unavailableFor.map { "\($0)" } ?? "?"); \
            longest answer \(all.map(\.took).max() ?? .zero)
            """)

        #expect(acknowledged.contains { $0.started > killed }, "writes did not resume through the same gateway after the failover")
        #expect(!unavailable.isEmpty, "no 503 was seen while there was no primary")
        #expect(unavailable.allSatisfy { $0.outcome == .unavailable(retryAfter: true) }, "a 503 without Retry-After")
        #expect(others.isEmpty, "answers that were neither acknowledged nor 503: \(others.prefix(5).map(\.outcome))")
        // Never a hang past the gateway's bounds: a connection within 2 s and an
        // answer within 5 s more, for each of a write's two database calls.
        let longest = all.map(\.took).max() ?? .zero
        #expect(longest < (Self.availabilityTimeout + .seconds(5)) * 2, "an answer took \(longest)")

        // On the new primary: every acknowledged batch whole, no batch half there.
        let newPrimary = try await primaryHost(of: admin)
        #expect(newPrimary != primaryEndpoint, "the primary did not change")
        let counts = try await TestDatabase.withConnection(newPrimary) { connection in
            let rows = try await connection.query("""
                SELECT z.name, split_part(r.record_name, '-', 1), count(*) FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id
                WHERE z.name LIKE 'w%' GROUP BY 1, 2
                """, logger: TestDatabase.logger)
            var counts: [String: Int64] = [:]
            for try await (zone, batch, count) in rows.decode((String, String, Int64).self) { counts["\(zone)/\(batch)"] = count }
            return counts
        }
        let lost = acknowledged.filter { counts["w\($0.writer)/b\($0.batch)"] != Int64(Self.recordsPerBatch) }
        #expect(lost.count == 0, "acknowledged batches not whole on the new primary: \(lost.prefix(5).map { "w\($0.writer)/b\($0.batch): \(counts["w\($0.writer)/b\($0.batch)"] ?? 0)" })")
        let half = counts.filter { $0.value != Int64(Self.recordsPerBatch) }
        #expect(half.count == 0, "batches half there: \(half.prefix(5))")
    }

    /// What the writers did, shared by them and the killer.
    final class Log: Sendable {
        let attempts = Mutex<[Attempt]>([])
        let killedAt = Mutex<ContinuousClock.Instant?>(nil)
        let stop = Atomic<Bool>(false)
    }

    /// One atomic batch of five new records, and what the gateway answered.
    static func write(batch: Int, writer: Int, client: any TestClientProtocol, token: String) async throws -> Attempt {
        let records = (0..<recordsPerBatch).map { index -> [String: Any] in
            ["recordName": "b\(batch)-r\(index)", "recordType": "Entry", "fields": ["writer": writer, "batch": batch]]
        }
        let body = try JSONSerialization.data(withJSONObject: [
            "query": """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "w\(writer)"}, save: $s, atomic: true) {
                  saved { recordName } errors { recordName code } } }
                """,
            "variables": ["s": records],
        ])
        let started = ContinuousClock.now
        let response = try await client.execute(
            uri: "/graphql", method: .post,
            headers: [.contentType: "application/json", .authorization: "Bearer \(token)"], body: ByteBuffer(bytes: body)
        )
        let took = ContinuousClock.now - started
        let json = try responseJSON(response.body)
        let answer = Answer(status: response.status, body: json, field: "modifyRecords")
        let outcome: Outcome
        if response.status == .serviceUnavailable {
            outcome = .unavailable(retryAfter: response.headers[.retryAfter] != nil)
        } else if response.status == .ok, (answer.object["saved"] as? [[String: Any]])?.count == recordsPerBatch {
            outcome = .acknowledged
        } else {
            outcome = .other("\(response.status.code) \(answer.code ?? "") \(answer.message)")
        }
        return Attempt(writer: writer, batch: batch, started: started, took: took, outcome: outcome)
    }

    /// The server of a multi-host URL that is the primary now.
    func primaryHost(of endpoint: DatabaseEndpoint) async throws -> DatabaseEndpoint {
        for index in endpoint.hosts.indices {
            let server = endpoint.host(index)
            let standby = try? await TestDatabase.withConnection(server) { connection in
                let rows = try await connection.query("SELECT pg_is_in_recovery()", logger: TestDatabase.logger)
                for try await value in rows.decode(Bool.self) { return value }
                return true
            }
            if standby == false { return server }
        }
        throw StoreError(.databaseUnavailable, "no primary among \(endpoint.displayURL)")
    }

    func run(_ executable: String, _ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.start(executable, arguments).wait()
    }
}

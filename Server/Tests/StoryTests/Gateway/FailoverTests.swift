@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
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
    static let script = "\(Repository.root)/scripts/auto-failover.sh"
    /// The gateway's bound on waiting for a connection; answers get the
    /// statement timeout (10 s) and 2 s more.
    static let availabilityTimeout = Duration.seconds(2)

    @Test("8 writers, the primary killed: every acknowledged batch is on the new primary, none is half there, the gateway answered 503 with Retry-After meanwhile and resumed without a restart")
    func killThePrimary() async throws {
        let directory = "/tmp/canopy-failover-\(UUID().uuidString.prefix(8))"
        let up = try await run(Self.script, ["up", directory])
        defer { _ = try? runBlocking(Self.script, ["down", directory]); try? FileManager.default.removeItem(atPath: directory) }
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

        let writers = BatchWriters()
        // A 3 s statement timeout: each database call then ends within 2 s
        // (a connection) + 5 s (an answer), well inside the test client's 20 s.
        try await harness.test(configuration: GatewayConfiguration(statementTimeout: .seconds(3)), live: true,
                               availabilityTimeout: Self.availabilityTimeout) { client in
            let send = BatchWriters.send(through: client, token: harness.aliceToken)
            try await writers.makeZones(send: send)
            try await writers.run(send: send) {
                let killed = try await run(Self.script, ["kill-primary", directory])
                #expect(killed.succeeded, "\(killed.output)")
                let now = writers.markFault()
                // Until writes are acknowledged again (60 s at most), then 2 s more.
                _ = try await writers.waitForAcknowledgement(after: now, within: .seconds(60))
                try await Task.sleep(for: .seconds(2))
            }
        }

        let killed = try #require(writers.faultAt)
        print("failover: \(writers.summary(around: killed))")
        #expect(writers.acknowledged(after: killed), "writes did not resume through the same gateway after the failover")
        #expect(!writers.unavailable.isEmpty, "no 503 was seen while there was no primary")
        #expect(writers.unavailable.allSatisfy { $0.outcome == .unavailable(retryAfter: true) }, "a 503 without Retry-After")
        #expect(writers.others.isEmpty && writers.unanswered.isEmpty,
                "answers that were neither acknowledged nor 503: \((writers.others + writers.unanswered).prefix(5).map(\.outcome))")
        // Never a hang past the gateway's bounds: a connection within 2 s and an
        // answer within 5 s more, for each of a write's two database calls (its
        // token, looked up again once the 4 s cache lapsed, and its transaction),
        // so 14 s; and 4 s for a loaded machine, where the answer's timer, the
        // response and the client's reading of it each wait for a core while
        // pg_auto_failover promotes (a clean-clone run saw 15.3 s). A gateway
        // without its deadlines waits PostgresNIO's minute for a dead server,
        // far past this bound (and past the test client's 20 s: unanswered).
        let longest = writers.all.map(\.took).max() ?? .zero
        #expect(longest < (Self.availabilityTimeout + .seconds(5)) * 2 + .seconds(4), "an answer took \(longest)")

        // On the new primary: every acknowledged batch whole, no batch half there.
        let newPrimary = try await primaryHost(of: admin)
        #expect(newPrimary != primaryEndpoint, "the primary did not change")
        writers.expectWholeBatches(try await BatchWriters.batchCounts(on: newPrimary))
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

    /// Runs a script to its end without holding a cooperative thread: `up`
    /// takes most of a minute, and the suites running beside this one (an
    /// in-process gateway among them) need both of this machine's.
    func run(_ executable: String, _ arguments: [String]) async throws -> Subprocess.Result {
        try await Subprocess.output(of: executable, arguments)
    }

    /// The same for a `defer`, which cannot wait without holding the thread.
    func runBlocking(_ executable: String, _ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.start(executable, arguments).wait()
    }
}

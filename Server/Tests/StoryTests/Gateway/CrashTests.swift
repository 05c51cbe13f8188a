@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import NIOCore
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Crashes under load (issue 20, part 1). Eight writers send atomic batches
/// and a client follows every writer's zone feed while a part dies: the
/// database (`pg_ctl stop -m immediate`, then started again), or the
/// gateway's process (`kill -9`, then started again). Afterwards every
/// batch the gateway acknowledged is there, none is half there, and the
/// feeds reported every committed record and no other.
@Suite("Crashes under load", .serialized)
struct CrashTests {
    /// The gateway's bound on waiting for a connection.
    static let availabilityTimeout = Duration.seconds(2)

    @Test("PostgreSQL stopped as by a power cut mid-batch and started again: acknowledged batches all there, none half, 503 with Retry-After meanwhile, recovered by itself, feeds skip and invent nothing")
    func databaseCrash() async throws {
        let directory = "/tmp/canopy-crash-\(UUID().uuidString.prefix(8))"
        let cluster = EmbeddedCluster(dataDirectory: directory)
        let running = try await cluster.start(logger: TestDatabase.logger)
        do {
            try await crashDatabase(cluster, running: running)
        } catch {
            try? await cluster.stop(logger: TestDatabase.logger)
            throw error
        }
        try await cluster.stop(logger: TestDatabase.logger)
        try? FileManager.default.removeItem(atPath: directory)
    }

    func crashDatabase(_ cluster: EmbeddedCluster, running: EmbeddedCluster.Running) async throws {
        let admin = running.adminEndpoint
        try await TestDatabase.withConnection(admin) { connection in
            try await Migrator(directory: TestDatabase.migrationsDirectory, logger: TestDatabase.logger).up(connection: connection)
        }
        let (alice, aliceToken) = try await addUser("alice", on: admin)
        let (bob, bobToken) = try await addUser("bob", on: admin)
        let harness = GatewayHarness(endpoint: admin, alice: alice, aliceToken: aliceToken.string, bob: bob, bobToken: bobToken.string)

        let writers = BatchWriters()
        let follower = FeedFollower(zones: (0..<writers.writers).map { "w\($0)" })
        try await harness.test(configuration: GatewayConfiguration(statementTimeout: .seconds(3)), live: true,
                               availabilityTimeout: Self.availabilityTimeout) { client in
            let send = BatchWriters.send(through: client, token: harness.aliceToken)
            try await writers.makeZones(send: send)
            try await writers.run(send: send, following: follower) {
                try await cluster.stop(logger: TestDatabase.logger, mode: .immediate)
                let down = writers.markFault()
                // Gone until the gateway has answered a batch with 503 (the
                // one in flight is answered at its deadline, 2 s for a
                // connection and 5 s for an answer: a shorter outage can end
                // with every batch acknowledged, and then there is nothing
                // to hold the 503 to), and a second more; at most 15 s.
                while writers.unavailable.isEmpty, ContinuousClock.now - down < .seconds(15) {
                    try await Task.sleep(for: .milliseconds(100))
                }
                try await Task.sleep(for: .seconds(1))
                let restarted = try await cluster.start(logger: TestDatabase.logger)
                #expect(restarted.port == running.port, "the cluster came back on another port")
                let resumed = try await writers.waitForAcknowledgement(after: ContinuousClock.now, within: .seconds(60))
                #expect(resumed, "writes did not resume after the database came back")
                try await Task.sleep(for: .seconds(2))
            }
            let caughtUp = try await follower.drain(send: send)
            #expect(caughtUp, "the feeds did not catch up after the writers stopped")
        }

        let crashed = try #require(writers.faultAt)
        print("database crash: \(writers.summary(around: crashed)); feed requests that failed: \(follower.failures)")
        print("around the crash:\n\(writers.timeline(around: crashed))")
        #expect(!writers.unavailable.isEmpty, "no 503 was seen while the database was down")
        #expect(writers.unavailable.allSatisfy { $0.outcome == .unavailable(retryAfter: true) }, "a 503 without Retry-After")
        #expect(writers.others.isEmpty && writers.unanswered.isEmpty,
                "answers that were neither acknowledged nor 503: \((writers.others + writers.unanswered).prefix(5).map(\.outcome))")
        let longest = writers.all.map(\.took).max() ?? .zero
        // Every request is answered (acknowledged or 503), none left hanging:
        // a hung one would wait for wrk's 60 s. The database is down for a few
        // seconds; on a loaded 2-core machine a writer's answer took 14.4 s
        // once (a clean-clone CI run), past the 14 s this bound was.
        #expect(longest < .seconds(30), "an answer took \(longest)")
        writers.expectWholeBatches(try await BatchWriters.batchCounts(on: admin))
        try await follower.expectMatches(admin)
    }

    @Test("the gateway's process killed with kill -9 mid-batch and started again: acknowledged batches all there, none half, feeds skip and invent nothing",
          .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
    func gatewayCrash() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("alice", on: admin)
        let port = try EmbeddedCluster.freePort()
        let serve: @Sendable () throws -> Subprocess.Started = {
            try CanopyBinary.serve(databaseURL: admin.url, port: port, ["--no-console", "--rate-limit", "0"])
        }
        var gateway = try serve()
        var stopped = false
        defer { if !stopped { kill(gateway.pid, SIGKILL); _ = try? gateway.wait() } }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")

        let http = HTTPClient.shared
        let send = Self.send(to: "http://127.0.0.1:\(port)/graphql", token: token.string, client: http)
        let writers = BatchWriters()
        let follower = FeedFollower(zones: (0..<writers.writers).map { "w\($0)" })
        try await writers.makeZones(send: send)
        let first = gateway
        // The killer hands back the gateway it started again. A kill that
        // found no batch in flight (the writers all between requests, as a
        // clean CI run once saw) is made again, up to three times.
        let restarted = try await writers.run(send: send, following: follower) {
            var current = first
            for _ in 1...3 {
                let unansweredBefore = writers.unanswered.count
                kill(current.pid, SIGKILL)
                _ = try await current.exit()
                writers.markFault()
                try await Task.sleep(for: .seconds(1))
                current = try serve()
                let serving = try await CanopyBinary.waitUntilServing(port: port)
                #expect(serving, "the restarted canopy serve did not answer /health")
                let resumed = try await writers.waitForAcknowledgement(after: ContinuousClock.now, within: .seconds(60))
                #expect(resumed, "writes did not resume through the restarted gateway")
                try await Task.sleep(for: .seconds(2))
                if writers.unanswered.count > unansweredBefore { break }
            }
            return current
        }
        gateway = restarted
        let caughtUp = try await follower.drain(send: send)
        #expect(caughtUp, "the feeds did not catch up after the writers stopped")
        kill(gateway.pid, SIGTERM)
        _ = try await gateway.exit()
        stopped = true

        let killed = try #require(writers.faultAt)
        print("gateway crash: \(writers.summary(around: killed)); feed requests that failed: \(follower.failures)")
        // Batches in flight when the process died had no answer: the kill
        // did land mid-batch.
        #expect(!writers.unanswered.isEmpty, "no batch was in flight when the gateway was killed")
        #expect(writers.others.isEmpty, "unexpected answers: \(writers.others.prefix(5).map(\.outcome))")
        writers.expectWholeBatches(try await BatchWriters.batchCounts(on: admin))
        try await follower.expectMatches(admin)
    }

    /// `send` through AsyncHTTPClient to a gateway in another process.
    static func send(to url: String, token: String, client: HTTPClient) -> BatchWriters.Send {
        { body in
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.body = .bytes(body)
            let response = try await client.execute(request, timeout: .seconds(20))
            let bytes = try await response.body.collect(upTo: 1 << 22)
            return BatchWriters.Answer(
                status: HTTPResponse.Status(code: Int(response.status.code)),
                retryAfter: response.headers.first(name: "Retry-After") != nil, body: bytes
            )
        }
    }
}

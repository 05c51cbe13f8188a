@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Logging
import NIOCore
import PostgresNIO
import Synchronization
import Testing
import WSClient
#if canImport(Glibc)
import Glibc
#endif

/// Faults between the parts (issue 53, part 1; docs/RELIABILITY.md,
/// "Network faults"). A gateway process and two PostgreSQL servers in
/// network namespaces of the test's own, joined by veth pairs
/// (`scripts/netns-lab.sh`); links cut mid-traffic by setting the server's
/// end down, the primary frozen with SIGSTOP. After each heal the database
/// itself is asked: nothing acknowledged lost, nothing refused applied,
/// nothing half there, one copy of a write whose commit went unanswered.
@Suite("Network faults between the parts", .serialized,
       .enabled(if: networkLabAvailable, "needs root, iproute2 and PostgreSQL's server programs (make test has them)"),
       .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct NetworkFaultTests {
    /// Each database call is answered within 2 s for a connection and 2 + 2
    /// for an answer; the listener is checked every second.
    static let gatewayFlags = ["--statement-timeout", "2", "--availability-timeout", "2", "--listener-heartbeat", "1"]
    /// The longest any request may take, on a loaded 2-core machine: a few
    /// database calls' bounds, never the TCP timeout's quarter hour.
    static let answerBound = Duration.seconds(30)
    /// How soon after a heal the gateway must acknowledge a write again.
    static let recoveryBound = Duration.seconds(20)

    @Test("the link to the primary cut during a write's COMMIT: that write answered 503 with Retry-After and outcomeUnknown, saved once (its resend a conflict); eight writers meanwhile: every answer within its bound, every acknowledged batch whole, none refused there, none half; writes resume after the heal without a restart")
    func partitionDuringCommit() async throws {
        let lab = try await NetworkLab.up()
        defer { lab.down() }
        let token = try await Self.prepare(lab)
        try await Self.slowCommits(on: lab.admin)
        let gateway = try NamespacedGateway(lab: lab, extra: Self.gatewayFlags + ["--replica-url", lab.replicaURL])
        defer { gateway.stop() }
        try #require(try await gateway.waitUntilServing(), "canopy serve in the namespace did not answer /health:\n\(gateway.log)")
        let send = CrashTests.send(to: "\(gateway.url)/graphql", token: token, client: .shared)
        let writers = BatchWriters()
        try await writers.makeZones(send: send)
        #expect(try await send(Self.body("mutation { saveZone(zoneName: \"slow\") { zoneName } }")).status == .ok)

        let slowAnswer = Mutex<BatchWriters.Answer?>(nil)
        let healedAt = Mutex<ContinuousClock.Instant?>(nil)
        try await writers.run(send: send) {
            // A save whose COMMIT takes 3 s on the server (a deferred trigger).
            let slow = Task { try await send(Self.saveSlowRecord()) }
            try await Self.waitUntilSleeping(lab.admin, inCommit: true)
            try lab.command("cut")
            writers.markFault()
            let answer = try await slow.value
            slowAnswer.withLock { $0 = answer }
            // Cut until the writers have been refused, and a second more.
            let deadline = ContinuousClock.now + .seconds(20)
            while writers.unavailable.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            try await Task.sleep(for: .seconds(1))
            try lab.command("heal")
            let healed = ContinuousClock.now
            healedAt.withLock { $0 = healed }
            let resumed = try await writers.waitForAcknowledgement(after: healed, within: Self.recoveryBound)
            #expect(resumed, "no write was acknowledged within \(Self.recoveryBound) of the heal:\n\(gateway.log.suffix(3000))")
            try await Task.sleep(for: .seconds(1))
        }

        let cut = try #require(writers.faultAt)
        print("partition during commit: \(writers.summary(around: cut))")
        print("around the cut:\n\(writers.timeline(around: cut))")
        // The write whose COMMIT was in flight.
        let answer = try #require(slowAnswer.withLock { $0 })
        let json = try JSONSerialization.jsonObject(with: Data(buffer: answer.body)) as? [String: Any]
        let extensions = ((json?["errors"] as? [[String: Any]])?.first?["extensions"] as? [String: Any]) ?? [:]
        #expect(answer.status == .serviceUnavailable && answer.retryAfter, "the write in COMMIT was answered \(answer.status): \(String(buffer: answer.body))")
        #expect(extensions["outcomeUnknown"] as? Bool == true, "not told the outcome is unknown: \(String(buffer: answer.body))")
        #expect(try await Self.count(named: "slow-1", on: lab.admin) == 1, "the write in COMMIT was not saved (the server finished it)")
        // Sent again, as an engine does: a conflict, and still one copy.
        let again = try await send(Self.saveSlowRecord())
        #expect(String(buffer: again.body).contains("SERVER_RECORD_CHANGED"), "the resend was answered \(String(buffer: again.body))")
        #expect(try await Self.count(named: "slow-1", on: lab.admin) == 1)

        #expect(!writers.unavailable.isEmpty, "no writer was answered 503 while the link was cut")
        writers.expectEveryAnswer(within: Self.answerBound)
        let counts = try await BatchWriters.batchCounts(on: lab.admin)
        writers.expectWholeBatches(counts)
        writers.expectRefusedAbsent(counts)
    }

    @Test("both sync engines (CanopyJS and CanopyKit devices of the fault run) save records whose write the link's cut leaves unanswered, during the COMMIT (applied) and before it (not applied): each keeps the edit, sends it again after the heal, and ends with exactly one copy on the server, holding its value, and nothing waiting",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/node"), "needs Node (scripts/ensure-node.sh)"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: NetworkFaultTests.faultDevice), "build canopykit-fault-device (swift build --build-tests)"))
    func enginesThroughACommitCut() async throws {
        let lab = try await NetworkLab.up()
        defer { lab.down() }
        let token = try await Self.prepare(lab)
        try await Self.slowCommits(on: lab.admin)
        let gateway = try NamespacedGateway(lab: lab, extra: Self.gatewayFlags)
        defer { gateway.stop() }
        try #require(try await gateway.waitUntilServing(), "canopy serve in the namespace did not answer /health:\n\(gateway.log)")
        let send = CrashTests.send(to: "\(gateway.url)/graphql", token: token, client: .shared)
        #expect(try await send(Self.body("mutation { saveZone(zoneName: \"slow\") { zoneName } }")).status == .ok)

        let options = try JSONSerialization.data(withJSONObject: [
            "baseURL": gateway.url, "token": token, "directory": lab.directory, "binary": CanopyBinary.path,
        ])
        let devices = try JSONLinesProcess("/usr/bin/node", [
            "--experimental-websocket", "--no-warnings", "\(Repository.root)/clients/js/test/fault/commit-cut.js",
            String(decoding: options, as: UTF8.self),
        ])
        defer { try? devices.send(["type": "stop"]) }
        let ready = await devices.expect("ready", within: .seconds(180))
        try #require(ready != nil, "commit-cut.js did not start: \(devices.log.suffix(10))")

        // slow-…: cut while the COMMIT is on the server (it commits; the
        // answer is lost: outcome unknown). stall-…: cut while the INSERT
        // runs, before the COMMIT is sent (never applied: the edit must be
        // sent again, or it is lost).
        let cases = [("js", "slow", 41), ("swift", "slow", 42), ("js", "stall", 43), ("swift", "stall", 44)]
        for (engine, kind, value) in cases {
            let name = "\(kind)-\(engine)"
            let queued = try await devices.ask(["type": "edit", "engine": engine, "recordName": name, "value": value], expecting: "queued")
            try #require(queued != nil, "\(name): the edit was not queued: \(devices.log.suffix(10))")
            // The engine sends it by itself; cut while the server is in it.
            try await Self.waitUntilSleeping(lab.admin, inCommit: kind == "slow")
            try lab.command("cut")
            // Past the gateway's deadline (4 s): the device was told 503.
            try await Task.sleep(for: .seconds(7))
            try lab.command("heal")
            let settled = try await devices.ask(["type": "settle", "engine": engine], expecting: "settled")
            let answer = try #require(settled, "\(name): did not settle: \(devices.log.suffix(10))")
            #expect(answer["error"] == nil, "\(name): settling failed: \(answer.fields)")
            #expect(answer["hasPending"] as? Bool == false, "\(name): edits still waiting: \(answer.fields)")
            let records = answer["records"] as? [String: [String: Any]] ?? [:]
            #expect((records[name]?["f_\(engine)"] as? NSNumber)?.intValue == value, "\(name): the device's copy: \(records)")
            #expect(try await Self.count(named: name, on: lab.admin) == 1, "\(name): not one copy on the server")
            let stored = try await TestDatabase.withConnection(lab.admin) { connection in
                try await connection.query("SELECT (fields ->> \("f_\(engine)"))::bigint FROM canopy.records WHERE record_name = \(name)",
                                           logger: TestDatabase.logger).collect()
            }
            #expect(try stored.first?.decode(Int64?.self) == Int64(value), "\(name): the server's copy does not hold the edit")
            print("\(name) through a cut: settled \(answer["pending"] ?? "?") pending; \(devices.log.suffix(4))")
        }
        let unknown = gateway.log.components(separatedBy: "outcome is unknown").count - 1
        #expect(unknown >= 2, "the gateway answered \(unknown) writes' outcome as unknown, not each slow one's")
    }

    @Test("the listener's connection silently dead (the link cut, the server forgetting it): noticed by its heartbeat and replaced without a restart; a subscriber is told every change that committed meanwhile, through another gateway")
    func silentListener() async throws {
        let lab = try await NetworkLab.up()
        defer { lab.down() }
        let users = try await Self.prepareUsers(lab)
        let token = users.aliceToken
        let gateway = try NamespacedGateway(lab: lab, extra: Self.gatewayFlags)
        defer { gateway.stop() }
        try #require(try await gateway.waitUntilServing(), "canopy serve in the namespace did not answer /health:\n\(gateway.log)")
        let send = CrashTests.send(to: "\(gateway.url)/graphql", token: token, client: .shared)
        #expect(try await send(Self.body("mutation { saveZone(zoneName: \"live\") { zoneName } }")).status == .ok)

        let received = Mutex<Set<String>>([])
        let subscribed = Atomic<Bool>(false)
        let written = (1...5).map { "during-\($0)" }
        let subscriber = Task {
            var headers = HTTPFields()
            headers[.secWebSocketProtocol] = "graphql-transport-ws"
            headers[.authorization] = "Bearer \(token)"
            try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(gateway.proxy.port)/graphql",
                configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: headers), logger: Logger(label: "subscriber")
            ) { inbound, outbound, _ in
                try await outbound.write(.text("{\"type\":\"connection_init\"}"))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    guard case .text(let text) = message else { continue }
                    if text.contains("connection_ack") {
                        try await outbound.write(.text(try subscribeMessage(id: "live", """
                            subscription { zoneChanged(scope: PRIVATE, zone: {zoneName: "live"}) { changed { recordName } token } }
                            """)))
                        subscribed.store(true, ordering: .relaxed)
                        continue
                    }
                    for name in written where text.contains("\"\(name)\"") {
                        _ = received.withLock { $0.insert(name) }
                    }
                }
            }
        }
        defer { subscriber.cancel() }
        // Subscribed, and the gateway listening (a save seen through it).
        try await Self.waitFor("the subscription", within: .seconds(60)) { subscribed.load(ordering: .relaxed) }
        try await Task.sleep(for: .milliseconds(500))
        let listener = try await Self.waitForListener(on: lab.admin)

        try lab.command("cut")
        try lab.forgetConnection(fromGatewayPort: listener)
        // Changes committed while the gateway's listener is dead, by another
        // gateway (in this process, over the primary's Unix socket).
        let other = GatewayHarness(endpoint: lab.admin, alice: users.alice, aliceToken: users.aliceToken, bob: users.bob, bobToken: users.bobToken)
        try await other.test { client in
            for name in written {
                let answer = try await client.call("modifyRecords", """
                    mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "live"}, save: [{recordName: "\(name)", recordType: "Entry", fields: {}}]) { saved { recordName } } }
                    """, token: token)
                #expect(answer.status == .ok && answer.code == nil, "\(answer.body)")
            }
        }
        try await Task.sleep(for: .seconds(3))
        try lab.command("heal")
        try await Self.waitFor("the subscriber to be told \(written)", within: .seconds(60)) {
            received.withLock { $0 } == Set(written)
        }
        let replaced = try await Self.waitForListener(on: lab.admin)
        #expect(replaced != listener, "the listening connection was not replaced")
        #expect(gateway.log.contains("did not answer its heartbeat"), "the heartbeat's failure was not logged:\n\(gateway.log.suffix(2000))")
    }

    @Test("the primary frozen (SIGSTOP) longer than every deadline, then thawed: every request answered in its bound (503 with Retry-After meanwhile), nothing refused applied after the thaw, every acknowledged batch whole; writes resume without a restart")
    func frozenPrimary() async throws {
        let lab = try await NetworkLab.up()
        defer { lab.down() }
        let token = try await Self.prepare(lab)
        let gateway = try NamespacedGateway(lab: lab, extra: Self.gatewayFlags)
        defer { gateway.stop() }
        try #require(try await gateway.waitUntilServing(), "canopy serve in the namespace did not answer /health:\n\(gateway.log)")
        let send = CrashTests.send(to: "\(gateway.url)/graphql", token: token, client: .shared)
        let writers = BatchWriters()
        try await writers.makeZones(send: send)

        try await writers.run(send: send) {
            try lab.command("freeze")
            writers.markFault()
            // Frozen past every deadline: 2 s to connect, 4 s to answer.
            try await Task.sleep(for: .seconds(8))
            try lab.command("thaw")
            let thawed = ContinuousClock.now
            let resumed = try await writers.waitForAcknowledgement(after: thawed, within: Self.recoveryBound)
            #expect(resumed, "no write was acknowledged within \(Self.recoveryBound) of the thaw:\n\(gateway.log.suffix(3000))")
            try await Task.sleep(for: .seconds(1))
        }
        let frozen = try #require(writers.faultAt)
        print("frozen primary: \(writers.summary(around: frozen))")
        print("around the freeze:\n\(writers.timeline(around: frozen))")
        #expect(!writers.unavailable.isEmpty, "no writer was answered 503 while the primary was frozen")
        writers.expectEveryAnswer(within: Self.answerBound)
        // Requests held by the frozen server finish only after the thaw:
        // give them their time before asking the database.
        try await Task.sleep(for: .seconds(3))
        let counts = try await BatchWriters.batchCounts(on: lab.admin)
        writers.expectWholeBatches(counts)
        writers.expectRefusedAbsent(counts)
    }

    @Test("the link to the replica cut: reads keep being answered (from the primary), each within its bound; after the heal the replica serves again")
    func replicaPartition() async throws {
        let lab = try await NetworkLab.up()
        defer { lab.down() }
        let token = try await Self.prepare(lab)
        let gateway = try NamespacedGateway(lab: lab, extra: Self.gatewayFlags + ["--replica-url", lab.replicaURL])
        defer { gateway.stop() }
        try #require(try await gateway.waitUntilServing(), "canopy serve in the namespace did not answer /health:\n\(gateway.log)")
        let send = CrashTests.send(to: "\(gateway.url)/graphql", token: token, client: .shared)
        #expect(try await send(Self.body("mutation { saveZone(zoneName: \"read\") { zoneName } }")).status == .ok)
        #expect(try await send(Self.body("""
            mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "read"}, save: [{recordName: "r1", recordType: "Entry", fields: {}}]) { saved { recordName } } }
            """)).status == .ok)
        let read = Self.body("{ records(scope: PRIVATE, zone: {zoneName: \"read\"}, recordType: \"Entry\") { records { recordName } } }")
        @Sendable func readOnce() async throws -> (HTTPResponse.Status, Duration, String) {
            let started = ContinuousClock.now
            let answer = try await send(read)
            return (answer.status, ContinuousClock.now - started, String(buffer: answer.body))
        }
        // Reads reach the replica before the cut.
        try await Self.waitFor("a read from the replica", within: .seconds(60)) {
            _ = try await readOnce()
            return try await Self.replicaReads(on: lab.replicaAdmin) > 0
        }
        try lab.command("cut", "replica")
        var answers: [(HTTPResponse.Status, Duration, String)] = []
        let until = ContinuousClock.now + .seconds(8)
        while ContinuousClock.now < until { answers.append(try await readOnce()) }
        try lab.command("heal", "replica")
        let failed = answers.filter { $0.0 != .ok || !$0.2.contains("r1") }
        #expect(failed.isEmpty, "reads failed while the replica was cut off: \(failed.prefix(3).map { "\($0.0) \($0.2.prefix(200))" })")
        let longest = answers.map(\.1).max() ?? .zero
        #expect(longest < Self.answerBound, "a read took \(longest)")
        print("replica cut: \(answers.count) reads, longest \(longest)")
        // Back in rotation: reads reach it again.
        let before = try await Self.replicaReads(on: lab.replicaAdmin)
        try await Self.waitFor("reads from the replica after the heal", within: .seconds(60)) {
            _ = try await readOnce()
            return try await Self.replicaReads(on: lab.replicaAdmin) > before
        }
    }
}

extension NetworkFaultTests {
    /// Cycles of the cycle test: 3 in `make test`, 20 in `make network-soak`.
    /// CanopyKit's device of the fault run, built beside canopy.
    static var faultDevice: String { "\(URL(fileURLWithPath: CanopyBinary.path).deletingLastPathComponent().path)/canopykit-fault-device" }

    static var cycles: Int { Int(ProcessInfo.processInfo.environment["CANOPY_NETWORK_CYCLES"] ?? "") ?? 3 }

    @Test("cut and heal the link to the primary again and again under eight writers: after every heal writes resume without a restart; the gateway's connections to PostgreSQL stay within its pool, and its sockets, threads and memory do not grow cycle on cycle")
    func cutAndHealCycles() async throws {
        let lab = try await NetworkLab.up()
        defer { lab.down() }
        let token = try await Self.prepare(lab)
        let gateway = try NamespacedGateway(lab: lab, extra: Self.gatewayFlags + ["--database-connections", "5"])
        defer { gateway.stop() }
        try #require(try await gateway.waitUntilServing(), "canopy serve in the namespace did not answer /health:\n\(gateway.log)")
        let send = CrashTests.send(to: "\(gateway.url)/graphql", token: token, client: .shared)
        let writers = BatchWriters()
        try await writers.makeZones(send: send)
        let samples = Mutex<[ProcessSample]>([])
        try await writers.run(send: send) {
            writers.markFault()
            for cycle in 1...Self.cycles {
                try lab.command("cut")
                try await Task.sleep(for: .seconds(3))
                try lab.command("heal")
                let healed = ContinuousClock.now
                let resumed = try await writers.waitForAcknowledgement(after: healed, within: Self.recoveryBound)
                #expect(resumed, "cycle \(cycle): no write acknowledged within \(Self.recoveryBound) of the heal")
                try await Task.sleep(for: .seconds(1))
                let sample = try await ProcessSample(pid: gateway.started.pid, connectionsOn: lab.admin)
                print("cycle \(cycle): \(sample)")
                samples.withLock { $0.append(sample) }
            }
        }
        let all = samples.withLock { $0 }
        // The pool is 5 (the listener one of them); a connection the pool is
        // still replacing may be counted twice for a moment. Serving on the
        // sockets' loops (CANOPY_SERVE_ON_LOOP=1, inherited), each loop (one
        // a core) has --loop-connections' 2 of its own besides.
        let onLoop = ProcessInfo.processInfo.environment["CANOPY_SERVE_ON_LOOP"] == "1"
        let bound = 6 + (onLoop ? 2 * ProcessInfo.processInfo.activeProcessorCount : 0)
        #expect(all.allSatisfy { $0.connections <= bound }, "connections to PostgreSQL past the pool: \(all.map(\.connections))")
        let first = try #require(all.first), last = try #require(all.last)
        #expect(last.sockets <= first.sockets + 8, "the gateway's open files grew: \(all.map(\.sockets))")
        #expect(last.threads <= first.threads + 4, "the gateway's threads grew: \(all.map(\.threads))")
        #expect(last.residentKiB <= first.residentKiB + 40 * 1024, "the gateway's memory grew: \(all.map(\.residentKiB)) KiB")
        let counts = try await BatchWriters.batchCounts(on: lab.admin)
        writers.expectWholeBatches(counts)
        writers.expectRefusedAbsent(counts)
        print("cut and heal x\(Self.cycles): \(writers.summary(around: try #require(writers.faultAt)))")
    }
}

/// What a process holds, from /proc, and its connections as PostgreSQL sees them.
struct ProcessSample: CustomStringConvertible {
    var sockets: Int
    var threads: Int
    var residentKiB: Int
    var connections: Int64

    init(pid: pid_t, connectionsOn endpoint: DatabaseEndpoint) async throws {
        sockets = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.dropFirst(name.count + 1).split(whereSeparator: \.isWhitespace).first ?? "") } ?? -1
        }
        threads = field("Threads")
        residentKiB = field("VmRSS")
        connections = try await TestDatabase.withConnection(endpoint) { connection in
            let rows = try await connection.query(
                "SELECT count(*) FROM pg_stat_activity WHERE client_addr = '10.231.1.1'", logger: TestDatabase.logger
            ).collect()
            return try rows.first?.decode(Int64.self) ?? -1
        }
    }

    var description: String {
        "\(connections) connections to PostgreSQL, \(sockets) open files, \(threads) threads, \(residentKiB / 1024) MiB resident"
    }
}

/// A slow, throttled, resetting and silent link between the gateway and
/// PostgreSQL, made by ``FaultProxy`` (the kernel here has no netem): the
/// gateway in this process, the shared test cluster behind the proxy over
/// its Unix socket. Needs no namespaces.
@Suite("A misbehaving link to PostgreSQL", .serialized)
struct LinkFaultTests {
    @Test("a link slowed (20 ms a chunk), throttled (20 KB/s), reset (RST both ways) and black-holed, under eight writers: slow and throttled writes still acknowledged; resets and silence answered 503 with Retry-After within the bound; nothing acknowledged lost, nothing refused applied, nothing half there; writes resume after each without a restart")
    func misbehavingLink() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        guard case .unixSocket(let directory, let port) = admin.transport else {
            Issue.record("the test cluster is not on a Unix socket: \(admin.displayURL)")
            return
        }
        let proxy = try FaultProxy(to: "unix:\(directory)/.s.PGSQL.\(port)")
        defer { proxy.stop() }
        let (alice, aliceToken) = try await addUser("alice", on: admin)
        let (bob, bobToken) = try await addUser("bob", on: admin)
        let harness = GatewayHarness(endpoint: admin, alice: alice, aliceToken: aliceToken.string, bob: bob, bobToken: bobToken.string)
        let throughProxy = DatabaseEndpoint(transport: .tcp(host: "127.0.0.1", port: proxy.port), username: "canopy_gateway", password: nil,
                                            database: admin.database)
        let writers = BatchWriters()
        let phases = Mutex<[(String, ContinuousClock.Instant, ContinuousClock.Instant)]>([])
        try await harness.test(configuration: GatewayConfiguration(statementTimeout: .seconds(2)), gatewayEndpoint: throughProxy, live: true,
                               availabilityTimeout: .seconds(2)) { client in
            // AsyncHTTPClient, a connection a writer: the test client sends
            // one request at a time, and one held by the silent link would
            // hold the others back in the client, not the gateway.
            let port = try #require(client.port)
            let send = CrashTests.send(to: "http://127.0.0.1:\(port)/graphql", token: harness.aliceToken, client: .shared)
            try await writers.makeZones(send: send)
            try await writers.run(send: send) {
                func phase(_ name: String, _ command: String, for time: Duration) async throws {
                    try proxy.send(command)
                    let start = ContinuousClock.now
                    try await Task.sleep(for: time)
                    try proxy.send("pass")
                    phases.withLock { $0.append((name, start, ContinuousClock.now)) }
                }
                writers.markFault()
                try await phase("slow", "delay 20", for: .seconds(4))
                try await phase("throttled", "throttle 20000", for: .seconds(4))
                try proxy.send("reset")
                let reset = ContinuousClock.now
                #expect(try await writers.waitForAcknowledgement(after: reset, within: NetworkFaultTests.recoveryBound), "no write acknowledged after the reset")
                try await phase("silent", "blackhole", for: .seconds(7))
                let healed = ContinuousClock.now
                #expect(try await writers.waitForAcknowledgement(after: healed, within: NetworkFaultTests.recoveryBound),
                        "no write acknowledged within \(NetworkFaultTests.recoveryBound) of the link's return")
                try await Task.sleep(for: .seconds(1))
            }
        }
        let start = try #require(writers.faultAt)
        print("misbehaving link: \(writers.summary(around: start))")
        for (name, from, to) in phases.withLock({ $0 }) {
            print("\(name): \(String(format: "%+.2f s", (from - start).inSeconds)) to \(String(format: "%+.2f s", (to - start).inSeconds))")
            if name == "silent" {
                print(writers.all.filter { $0.started + $0.took > from && $0.started < to }.map {
                    "w\($0.writer) b\($0.batch) \(String(format: "%+.2f", ($0.started - start).inSeconds)) -> \(String(format: "%+.2f", ($0.started + $0.took - start).inSeconds)) \($0.outcome)"
                }.joined(separator: "\n"))
            }
        }
        let all = writers.all
        for (name, from, to) in phases.withLock({ $0 }) {
            let started = all.filter { $0.started >= from && $0.started < to }
            print("\(name): \(started.count) batches started, \(started.filter { $0.outcome == .acknowledged }.count) acknowledged")
            if name != "silent" {
                // Slower, and answered: a 503 only for one that waited past
                // its deadline behind the others (the pool is four).
                #expect(started.contains { $0.outcome == .acknowledged }, "no batch acknowledged while the link was \(name)")
            } else {
                #expect(started.contains { $0.outcome == .unavailable(retryAfter: true) }, "no batch answered 503 while the link was silent")
                let within = started.filter { $0.started + $0.took < to }
                #expect(within.allSatisfy { $0.outcome != .acknowledged }, "a batch acknowledged through a silent link")
            }
        }
        #expect(!writers.unavailable.isEmpty, "no writer was answered 503 by a reset or silent link")
        writers.expectEveryAnswer(within: NetworkFaultTests.answerBound)
        let counts = try await BatchWriters.batchCounts(on: admin)
        writers.expectWholeBatches(counts)
        writers.expectRefusedAbsent(counts)
    }
}

extension NetworkFaultTests {
    /// Migrates the lab's database and adds alice; her token.
    static func prepare(_ lab: NetworkLab) async throws -> String {
        try await prepareUsers(lab).aliceToken
    }

    struct Users {
        var alice: UserSummary
        var aliceToken: String
        var bob: UserSummary
        var bobToken: String
    }

    /// Migrates the lab's database and adds alice and bob.
    static func prepareUsers(_ lab: NetworkLab) async throws -> Users {
        try await TestDatabase.withConnection(lab.admin) { connection in
            try await Migrator(directory: TestDatabase.migrationsDirectory, logger: TestDatabase.logger).up(connection: connection)
        }
        let (alice, aliceToken) = try await addUser("alice", on: lab.admin)
        let (bob, bobToken) = try await addUser("bob", on: lab.admin)
        return Users(alice: alice, aliceToken: aliceToken.string, bob: bob, bobToken: bobToken.string)
    }

    /// Records named `slow…` take 3 s to COMMIT: a deferred constraint
    /// trigger sleeps at commit time, so a test can cut the link while a
    /// COMMIT is in flight. Records named `stall…` take 1.5 s to insert
    /// (within the 2 s statement timeout): a cut then lands before COMMIT.
    static func slowCommits(on endpoint: DatabaseEndpoint) async throws {
        try await TestDatabase.withConnection(endpoint) { connection in
            for statement in [
                "CREATE SCHEMA IF NOT EXISTS lab",
                "CREATE FUNCTION lab.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$",
                """
                CREATE CONSTRAINT TRIGGER lab_slow_commit AFTER INSERT ON canopy.records DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.record_name LIKE 'slow%') EXECUTE FUNCTION lab.slow_commit()
                """,
                "CREATE FUNCTION lab.stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$",
                """
                CREATE TRIGGER lab_stall BEFORE INSERT ON canopy.records
                FOR EACH ROW WHEN (NEW.record_name LIKE 'stall%') EXECUTE FUNCTION lab.stall()
                """,
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: TestDatabase.logger)
            }
        }
    }

    static func saveSlowRecord() -> ByteBuffer {
        body("""
            mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "slow"}, save: [{recordName: "slow-1", recordType: "Entry", fields: {}}]) {
              saved { recordName } errors { recordName code } } }
            """)
    }

    /// Waits until a backend sleeps in a lab trigger: in COMMIT (slow…),
    /// or in the INSERT before it (stall…).
    static func waitUntilSleeping(_ endpoint: DatabaseEndpoint, inCommit: Bool) async throws {
        try await waitFor(inCommit ? "a COMMIT in flight" : "an INSERT in flight", within: .seconds(60)) {
            try await TestDatabase.withConnection(endpoint) { connection in
                let rows = try await connection.query(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND (query = 'COMMIT') = \(inCommit)", logger: TestDatabase.logger
                ).collect()
                return try rows.first?.decode(Int64.self) ?? 0 > 0
            }
        }
    }

    static func count(named name: String, on endpoint: DatabaseEndpoint) async throws -> Int64 {
        try await TestDatabase.withConnection(endpoint) { connection in
            let rows = try await connection.query("SELECT count(*) FROM canopy.records WHERE record_name = \(name)", logger: TestDatabase.logger).collect()
            return try rows.first?.decode(Int64.self) ?? 0
        }
    }

    /// The gateway's port of its listening connection, as the primary sees it.
    static func waitForListener(on endpoint: DatabaseEndpoint) async throws -> Int {
        let port = Mutex<Int?>(nil)
        try await waitFor("the gateway's listening connection", within: .seconds(60)) {
            let found = try await TestDatabase.withConnection(endpoint) { connection in
                let rows = try await connection.query("""
                    SELECT client_port FROM pg_stat_activity
                    WHERE client_addr = '10.231.1.1' AND (query LIKE 'LISTEN%' OR query LIKE '%canopy_listener_heartbeat%')
                    """, logger: TestDatabase.logger).collect()
                return try rows.first?.decode(Int.self)
            }
            port.withLock { $0 = found }
            return found != nil
        }
        return try #require(port.withLock { $0 })
    }

    /// Scans of the records table the replica has made: the gateway's reads
    /// (the test's own questions here scan no table of canopy's).
    static func replicaReads(on endpoint: DatabaseEndpoint) async throws -> Int64 {
        try await TestDatabase.withConnection(endpoint) { connection in
            let rows = try await connection.query(
                "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::bigint FROM pg_stat_user_tables WHERE schemaname = 'canopy' AND relname = 'records'",
                logger: TestDatabase.logger
            ).collect()
            return try rows.first?.decode(Int64.self) ?? 0
        }
    }

    static func waitFor(_ what: String, within limit: Duration, _ condition: @Sendable () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        Issue.record("waited \(limit) for \(what)")
        throw NetworkLabFailure("waited \(limit) for \(what)")
    }

    static func body(_ query: String) -> ByteBuffer {
        ByteBuffer(bytes: try! JSONSerialization.data(withJSONObject: ["query": query]))
    }
}

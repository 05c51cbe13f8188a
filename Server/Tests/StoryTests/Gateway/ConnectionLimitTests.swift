@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The connection-level abuse limits (issue 20, part 3) of `canopy serve`
/// as a process, hit by a second, independent client on raw sockets
/// (`Server/Tests/python/connection_limits.py`): an oversized header is 400 and
/// closed; slowloris connections trickling header bytes are cut at the
/// head deadline while a normal request is answered at once; an idle
/// keep-alive connection is closed at the idle timeout; an oversized
/// WebSocket frame closes the socket with 1009; a socket that never sends
/// `connection_init` is closed with 4408 at `--websocket-init-timeout`; a
/// socket that never answers pings is closed with 1001 while one that
/// answers stays.
@Suite("Connection limits", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct ConnectionLimitTests {
    @Test("headers, slow and idle connections, WebSocket frames and pings, each past its limit")
    func limits() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("alice", on: endpoint)
        let port = try EmbeddedCluster.freePort()
        let started = try CanopyBinary.serve(databaseURL: endpoint.url, port: port, [
            "--no-console", "--max-header-size", "4096", "--request-head-timeout", "1", "--idle-timeout", "2",
            "--max-websocket-frame", "65536", "--websocket-ping-interval", "1", "--websocket-init-timeout", "2",
        ])
        defer { kill(started.pid, SIGTERM); _ = try? started.wait() }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")

        let run = try await Subprocess.start("/usr/bin/env", ["python3", "\(Repository.root)/Server/Tests/python/connection_limits.py", String(port), token.string]).exit()
        try #require(run.succeeded, "connection_limits.py failed:\n\(run.output)")
        let line = try #require(run.output.split(separator: "\n").last)
        let results = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(run.output)")
        print("connection limits: \(line)")

        let small = results["small_header"] as? [String: Any]
        #expect(small?["status"] as? Int == 200, "a 2 KB header is within 4 KB: \(small ?? [:])")
        let big = results["big_header"] as? [String: Any]
        #expect(big?["status"] as? Int == 400 && big?["closed"] as? Bool == true, "a 5 KB header: \(big ?? [:])")

        let slow = try #require(results["slowloris"] as? [String: Any])
        let closedAfter = slow["closed_after"] as? [Any] ?? []
        let seconds = closedAfter.compactMap { $0 as? Double }
        #expect(seconds.count == 20, "every slowloris connection is closed: \(closedAfter)")
        #expect(seconds.allSatisfy { $0 < 3 }, "closed near the 1 s head deadline, not later: \(seconds)")
        #expect(slow["normal_status"] as? Int == 200, "\(slow)")
        #expect((slow["normal_seconds"] as? Double ?? 99) < 1, "a normal request was answered at once beside them: \(slow)")

        let idle = try #require(results["idle"] as? [String: Any])
        #expect(idle["status"] as? Int == 200)
        let idleFor = idle["closed_after"] as? Double
        #expect(idleFor.map { $0 > 1 && $0 < 4 } == true, "an idle keep-alive connection closed after about 2 s: \(idle)")

        let frame = try #require(results["frame"] as? [String: Any])
        #expect(frame["code"] as? Int == 1009, "a 70 KB frame past 64 KB closes with 1009 (message too big): \(frame)")

        let uninitialised = try #require(results["no_init"] as? [String: Any])
        #expect(uninitialised["code"] as? Int == 4408, "a socket without connection_init is closed with 4408: \(uninitialised)")
        let initialisedBy = uninitialised["closed_after"] as? Double
        #expect(initialisedBy.map { $0 > 1 && $0 < 9 } == true, "at the 2 s --websocket-init-timeout (timed from before the upgrade), not before it nor at the 10 s default: \(uninitialised)")

        let quiet = try #require(results["no_pong"] as? [String: Any])
        #expect(quiet["code"] as? Int == 1001, "a socket that never answers pings is closed going-away: \(quiet)")
        #expect((quiet["closed_after"] as? Double).map { $0 < 4 } == true, "within about two ping intervals: \(quiet)")
        let answering = try #require(results["pong"] as? [String: Any])
        #expect(answering["closed_after"] is NSNull, "a socket that answers pings stays open: \(answering)")
        #expect((answering["pings"] as? Int ?? 0) >= 2, "\(answering)")
    }
}

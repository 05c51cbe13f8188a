@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import NIOCore
import Testing

/// Traces (issue 53, docs/TRACING.md) from a real `canopy serve`, configured
/// only by the standard OTEL_* variables, to a real OTLP/HTTP receiver on
/// loopback (Server/Tests/python/otlp_receiver.py, decoding with the protocol's own
/// messages): the tree of spans one request makes, the client's
/// `traceparent` as its parent, the trace carried on to a webhook, nothing
/// about who asked in any attribute, and no spans at all unless asked for.
@Suite("Traces", .serialized, .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct TracingTests {
    /// A span as the receiver printed it.
    struct ReceivedSpan: CustomStringConvertible {
        var traceID: String
        var spanID: String
        var parentID: String
        var name: String
        var kind: String
        var attributes: [String: Any]
        var status: String
        var service: String?
        /// The span's events' attributes, and its status message.
        var events: [[String: Any]]
        var statusMessage: String

        init(_ line: JSONLinesProcess.Line) {
            traceID = line["trace_id"] as? String ?? ""
            spanID = line["span_id"] as? String ?? ""
            parentID = line["parent_span_id"] as? String ?? ""
            name = line["name"] as? String ?? ""
            kind = line["kind"] as? String ?? ""
            attributes = line["attributes"] as? [String: Any] ?? [:]
            status = line["status"] as? String ?? ""
            service = line["service"] as? String
            events = (line["events"] as? [[String: Any]] ?? []).map { $0["attributes"] as? [String: Any] ?? [:] }
            statusMessage = line["status_message"] as? String ?? ""
        }

        var description: String { "\(name) [\(kind)] \(spanID) ← \(parentID.isEmpty ? "root" : parentID)" }
    }

    /// The receiver, and the spans read from it so far.
    final class Receiver: @unchecked Sendable {
        let process: JSONLinesProcess
        let port: Int
        private(set) var spans: [ReceivedSpan] = []

        init() throws {
            process = try JSONLinesProcess("/usr/bin/env", ["python3", "\(Repository.root)/Server/Tests/python/otlp_receiver.py"])
            guard let listening = process.next("listening", within: .seconds(60)), let port = listening["port"] as? Int else {
                throw NetworkLabFailure("otlp_receiver.py did not start: \(process.log)")
            }
            self.port = port
        }

        /// Reads spans until `done` holds of them, for at most `limit`.
        func spans(within limit: Duration = .seconds(30), until done: ([ReceivedSpan]) -> Bool) async -> [ReceivedSpan] {
            let deadline = ContinuousClock.now + limit
            while !done(spans), ContinuousClock.now < deadline {
                let left = deadline - ContinuousClock.now
                guard let line = await process.expect("span", within: min(left, .seconds(1)) ) else {
                    if !process.process.isRunning { break }
                    continue
                }
                spans.append(ReceivedSpan(line))
            }
            return spans
        }
    }

    static func serve(_ admin: DatabaseEndpoint, port: Int, otlpPort: Int, _ environment: [String: String] = [:]) throws -> Subprocess.Started {
        try CanopyBinary.serve(databaseURL: admin.url, port: port, ["--no-console", "--rate-limit", "0"], environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(otlpPort)",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        ].merging(environment) { $1 })
    }

    /// POST /graphql with a token and, when given, a `traceparent`; the body and the request ID.
    static func call(port: Int, token: String, traceParent: String? = nil, _ query: String) async throws -> (body: String, requestID: String) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/graphql")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        if let traceParent { request.headers.add(name: "traceparent", value: traceParent) }
        request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["query": query])))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return (String(buffer: try await response.body.collect(upTo: 1 << 20)), response.headers.first(name: "X-Request-ID") ?? "")
    }

    static func randomHex(bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    @Test("one write and one read make the expected tree of spans under the client's traceparent; the webhook call continues the trace; no attribute names who asked")
    func spanTree() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("tracy", on: admin)
        let receiver = try Receiver()
        let webhooks = try await WebhookReceiver()
        let port = try EmbeddedCluster.freePort()
        let gateway = try Self.serve(admin, port: port, otlpPort: receiver.port)
        defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")

        _ = try await Self.call(port: port, token: token.string, "mutation { registerDevice(kind: WEBHOOK, url: \"\(webhooks.url("tracy"))\") { deviceID } }")
        _ = try await Self.call(port: port, token: token.string, "mutation { saveSubscription(subscriptionID: \"all\", kind: DATABASE) { subscriptionID } }")

        // The write, as a child of a client's span.
        let writeTrace = Self.randomHex(bytes: 16), clientSpan = Self.randomHex(bytes: 8)
        let write = try await Self.call(port: port, token: token.string, traceParent: "00-\(writeTrace)-\(clientSpan)-01",
            #"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "secret-note-name", recordType: "Note", fields: {title: "private words"}}]) { saved { recordName } } }"#)
        #expect(write.body.contains("secret-note-name"), "\(write.body)")
        // A read of its own trace.
        let readTrace = Self.randomHex(bytes: 16)
        let read = try await Self.call(port: port, token: token.string, traceParent: "00-\(readTrace)-\(Self.randomHex(bytes: 8))-01",
            #"{ records(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, recordType: "Note") { records { recordName } } }"#)
        #expect(read.body.contains("secret-note-name"), "\(read.body)")

        // The webhook for the write, carrying its trace.
        #expect(await eventually(timeout: .seconds(60)) { await webhooks.log.count() >= 1 }, "no webhook arrived")
        let hook = try #require(await webhooks.log.received.first)
        let hookParent = try #require(hook.headers["traceparent"], "the webhook call had no traceparent: \(hook.headers)")
        let hookParts = hookParent.split(separator: "-").map(String.init)
        #expect(hookParts.count == 4 && hookParts[1] == writeTrace, "the webhook's traceparent \(hookParent) is not of the write's trace \(writeTrace)")

        let spans = await receiver.spans { spans in
            spans.contains { $0.traceID == writeTrace && $0.name == "webhook POST" }
                && spans.contains { $0.traceID == readTrace && $0.kind == "SERVER" }
                && spans.contains { $0.traceID == readTrace && $0.name == "db query" }
        }
        let writeSpans = spans.filter { $0.traceID == writeTrace }
        let readSpans = spans.filter { $0.traceID == readTrace }
        let tree = "write: \(writeSpans)\nread: \(readSpans)"

        // The write's request span: the client's span its parent.
        let server = try #require(writeSpans.first { $0.kind == "SERVER" }, "no server span for the write: \(tree)")
        #expect(server.parentID == clientSpan, "\(tree)")
        #expect(server.name == "POST /graphql", "\(tree)")
        #expect(server.service == "canopy")
        #expect(server.attributes["http.route"] as? String == "/graphql")
        #expect(server.attributes["http.response.status_code"] as? Int == 200)
        #expect(server.attributes["canopy.request_id"] as? String == write.requestID, "the span does not name the request ID the client got")
        #expect(server.attributes["canopy.deadline.connection_ms"] as? Int ?? 0 > 0, "no deadline on the request span: \(server.attributes)")
        // Below it: the root field, its transaction, the statement.
        let field = try #require(writeSpans.first { $0.name == "graphql modifyRecords" }, "\(tree)")
        #expect(field.parentID == server.spanID, "\(tree)")
        #expect(field.attributes["canopy.plan"] as? String != nil, "the field's span does not name its plan: \(field.attributes)")
        let transaction = try #require(writeSpans.first { $0.name == "db transaction" }, "\(tree)")
        #expect(transaction.parentID == field.spanID, "\(tree)")
        #expect(transaction.kind == "CLIENT")
        #expect(transaction.attributes["db.system.name"] as? String == "postgresql")
        #expect(transaction.attributes["canopy.deadline.answer_ms"] as? Int ?? 0 > 0)
        let statements = writeSpans.filter { $0.name == "db query" && $0.parentID == transaction.spanID }
        #expect(!statements.isEmpty, "no statement span under the transaction: \(tree)")
        // The webhook call: in the write's trace, below its transaction,
        // and the span whose ID the receiver got as the parent.
        let webhook = try #require(writeSpans.first { $0.name == "webhook POST" }, "\(tree)")
        #expect(webhook.kind == "CLIENT")
        #expect(webhook.parentID == transaction.spanID, "\(tree)")
        #expect(hookParts.count == 4 && hookParts[2] == webhook.spanID, "the webhook got parent \(hookParent), its span is \(webhook.spanID)")
        #expect(webhook.attributes["canopy.push.outcome"] as? String == "delivered")

        // The read: its field, the plan (a miss: the first such query), the read and its statement.
        let readServer = try #require(readSpans.first { $0.kind == "SERVER" }, "\(tree)")
        let readField = try #require(readSpans.first { $0.name == "graphql records" }, "\(tree)")
        #expect(readField.parentID == readServer.spanID)
        let plan = try #require(readSpans.first { $0.name == "plan" }, "\(tree)")
        #expect(plan.parentID == readField.spanID)
        #expect(["miss", "hit"].contains(plan.attributes["canopy.plan.cache"] as? String ?? ""), "\(plan.attributes)")
        let dbRead = try #require(readSpans.first { $0.name == "db read" }, "\(tree)")
        #expect(dbRead.parentID == readField.spanID)
        #expect(dbRead.attributes["canopy.db.source"] as? String == "primary")
        #expect((dbRead.attributes["canopy.db.server"] as? String)?.contains("127.0.0.1") == true || dbRead.attributes["canopy.db.server"] != nil)
        let readStatement = try #require(readSpans.first { $0.name == "db query" }, "\(tree)")
        #expect(readStatement.parentID == dbRead.spanID)
        #expect(readStatement.attributes["db.response.returned_rows"] as? Int == 1)

        // Nothing about who asked or what they wrote, in any span.
        let forbidden = [token.string, "tracy", "secret-note-name", "private words", webhooks.url("tracy")]
        for span in spans {
            for (key, value) in span.attributes {
                let text = "\(value)"
                for word in forbidden {
                    #expect(!text.contains(word), "span \(span.name)'s \(key) holds \(word): \(text)")
                }
            }
        }
        await gateway.stop()
        print("traces: \(writeSpans.count) spans for the write, \(readSpans.count) for the read; the webhook continued trace \(writeTrace)")
    }

    @Test("a read a streaming replica answers says so in its span, naming the replica")
    func replicaInSpan() async throws {
        try await ReplicatedCluster.with(delay: nil) { replicated in
            let receiver = try Receiver()
            let port = try EmbeddedCluster.freePort()
            let gateway = try CanopyBinary.serve(
                databaseURL: replicated.harness.endpoint.url, port: port,
                ["--no-console", "--rate-limit", "0", "--replica-url", replicated.replica.url],
                environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "100"]
            )
            defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
            #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
            // Bob has written nothing here: once the replica is in rotation,
            // his reads go to it.
            var replicaRead: ReceivedSpan?
            let deadline = ContinuousClock.now + .seconds(60)
            while replicaRead == nil, ContinuousClock.now < deadline {
                let trace = Self.randomHex(bytes: 16)
                _ = try await Self.call(port: port, token: replicated.harness.bobToken, traceParent: "00-\(trace)-\(Self.randomHex(bytes: 8))-01",
                    #"{ records(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, recordType: "Note") { records { recordName } } }"#)
                let spans = await receiver.spans(within: .seconds(5)) { spans in spans.contains { $0.traceID == trace && $0.name == "db read" } }
                replicaRead = spans.first { $0.traceID == trace && $0.name == "db read" && $0.attributes["canopy.db.source"] as? String == "replica" }
            }
            let reads = await receiver.spans(within: .zero) { _ in true }.filter { $0.name == "db read" }.map(\.attributes)
            let span = try #require(replicaRead, "no read was answered by the replica within 60 s: \(reads.suffix(3))")
            let server = span.attributes["canopy.db.server"] as? String ?? ""
            #expect(server == replicated.replica.displayURL, "the span names \(server), the replica is \(replicated.replica.displayURL)")
            #expect(span.attributes["canopy.deadline.connection_ms"] as? Int == 1000, "a replica gets a second for a connection: \(span.attributes)")
            await gateway.stop()
        }
    }

    @Test("issue 64: a refused request's span names its code; a failed statement's span names no zone (no exception.message); /health is not traced")
    func refusalsAndFailures() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("refusy", on: admin)
        let receiver = try Receiver()
        let port = try EmbeddedCluster.freePort()
        let gateway = try Self.serve(admin, port: port, otlpPort: receiver.port)
        defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
        // Refused whole: an unknown token.
        let refusedTrace = Self.randomHex(bytes: 16)
        let refused = try await Self.call(port: port, token: "cnp_nobody", traceParent: "00-\(refusedTrace)-\(Self.randomHex(bytes: 8))-01", "{ me { userRecordName } }")
        #expect(refused.body.contains("NOT_AUTHENTICATED"), "\(refused.body)")
        // A statement that fails naming what it was asked for.
        let failedTrace = Self.randomHex(bytes: 16)
        let failed = try await Self.call(port: port, token: token.string, traceParent: "00-\(failedTrace)-\(Self.randomHex(bytes: 8))-01",
            #"mutation { saveShare(zoneName: "secret-zone-name", participants: [{email: "someone-secret@example.com", permission: READ_ONLY}]) { url } }"#)
        #expect(failed.body.contains("errors"), "\(failed.body)")
        for query in [
            #"mutation { deleteSubscription(subscriptionID: "secret-sub-id") }"#,
            #"{ records(scope: PRIVATE, zone: {zoneName: "secret-zone-name"}, recordType: "Note") { records { recordName } } }"#,
            #"{ records(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, recordType: "Note", filter: "title == 'secret-filter-value' AND") { records { recordName } } }"#,
        ] {
            let answer = try await Self.call(port: port, token: token.string, traceParent: "00-\(failedTrace)-\(Self.randomHex(bytes: 8))-01", query)
            #expect(answer.body.contains("errors"), "\(answer.body)")
        }
        // A health check, with a trace of its own.
        let healthTrace = Self.randomHex(bytes: 16)
        var health = HTTPClientRequest(url: "http://127.0.0.1:\(port)/health")
        health.headers.add(name: "traceparent", value: "00-\(healthTrace)-\(Self.randomHex(bytes: 8))-01")
        _ = try await HTTPClient.shared.execute(health, timeout: .seconds(30))
        let marker = Self.randomHex(bytes: 16)
        _ = try await Self.call(port: port, token: token.string, traceParent: "00-\(marker)-\(Self.randomHex(bytes: 8))-01", "{ me { userRecordName } }")
        let spans = await receiver.spans { spans in
            spans.contains { $0.traceID == refusedTrace && $0.kind == "SERVER" }
                && spans.filter { $0.traceID == failedTrace && $0.kind == "SERVER" }.count >= 4
                && spans.contains { $0.traceID == marker && $0.kind == "SERVER" }
        }
        let server = try #require(spans.first { $0.traceID == refusedTrace && $0.kind == "SERVER" }, "\(spans)")
        #expect(server.attributes["canopy.error_code"] as? String == "NOT_AUTHENTICATED", "\(server.attributes)")
        #expect(server.attributes["http.response.status_code"] as? Int == 401)
        let failedSpans = spans.filter { $0.traceID == failedTrace }
        #expect(failedSpans.count > 1, "\(failedSpans)")
        for span in failedSpans {
            #expect(span.attributes["exception.message"] == nil && !span.events.contains { $0["exception.message"] != nil },
                    "span \(span.name): \(span.attributes) \(span.events)")
            #expect(span.statusMessage.isEmpty, "span \(span.name): \(span.statusMessage)")
            for (key, value) in span.attributes.merging(span.events.flatMap { $0 }, uniquingKeysWith: { first, _ in first }) {
                for word in ["secret-zone-name", "someone-secret", "secret-sub-id", "secret-filter-value"] {
                    #expect(!"\(value)".contains(word), "span \(span.name)'s \(key): \(value)")
                }
            }
        }
        #expect(!spans.contains { $0.traceID == healthTrace }, "/health was traced")
        await gateway.stop()
    }

    @Test("issue 66: a Web Services request's span names its endpoint (…/{database}/records/query, …/tokens/create), not the door's catch-all; an unknown operation is still the reference's NOT_FOUND")
    func webServicesEndpointNames() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("webby", on: admin)
        let apiToken = try await WebServicesFixture.apiToken(on: admin)
        let receiver = try Receiver()
        let port = try EmbeddedCluster.freePort()
        let gateway = try CanopyBinary.serve(databaseURL: admin.url, port: port, ["--no-console", "--rate-limit", "0", "--container", WebServicesFixture.container], environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_BSP_SCHEDULE_DELAY": "100",
        ])
        defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
        var traces: [String: String] = [:]
        for (subpath, body) in [("private/records/query", #"{"query": {"recordType": "Note"}}"#), ("tokens/create", "{}"), ("private/records/frobnicate", "{}")] {
            let trace = Self.randomHex(bytes: 16)
            traces[subpath] = trace
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/database/1/\(WebServicesFixture.container)/production/\(subpath)?ckAPIToken=\(apiToken)&ckWebAuthToken=\(token.string)")
            request.method = .POST
            request.headers.add(name: "traceparent", value: "00-\(trace)-\(Self.randomHex(bytes: 8))-01")
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            if subpath.hasSuffix("frobnicate") {
                #expect(response.status.code == 404 && text.contains("NOT_FOUND"), "\(response.status) \(text)")
            } else {
                #expect(response.status.code == 200, "\(subpath): \(response.status) \(text)")
            }
        }
        let spans = await receiver.spans { spans in traces.values.allSatisfy { trace in spans.contains { $0.traceID == trace && $0.kind == "SERVER" } } }
        func route(_ subpath: String) -> String? {
            spans.first { $0.traceID == traces[subpath] && $0.kind == "SERVER" }?.attributes["http.route"] as? String
        }
        #expect(route("private/records/query") == "/database/1/{container}/{environment}/{database}/records/query", "\(spans)")
        #expect(route("tokens/create") == "/database/1/{container}/{environment}/tokens/create", "\(spans)")
        #expect(route("private/records/frobnicate") == "/database/1/{container}/{environment}/{database}/**", "\(spans)")
        await gateway.stop()
    }

    @Test("a collector nobody answers at does not fail or hold requests, and canopy serve still stops cleanly")
    func collectorDown() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("lonely", on: admin)
        let port = try EmbeddedCluster.freePort(), nobody = try EmbeddedCluster.freePort()
        let gateway = try CanopyBinary.serve(databaseURL: admin.url, port: port, ["--no-console", "--rate-limit", "0"], environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(nobody)", "OTEL_BSP_SCHEDULE_DELAY": "100",
        ])
        defer { kill(gateway.pid, SIGKILL); _ = gateway.waitBlocking(within: .seconds(5)) }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
        for _ in 0..<20 {
            let answer = try await Self.call(port: port, token: token.string, "{ me { userRecordName } }")
            #expect(answer.body.contains("userRecordName") && !answer.body.contains("errors"), "\(answer.body)")
            try await Task.sleep(for: .milliseconds(50))
        }
        let stopped = await gateway.stop(grace: .seconds(25))
        #expect(stopped?.status == 0, "canopy serve did not stop cleanly with its collector away: \(stopped.map { "status \($0.status): \($0.output.suffix(3000))" } ?? "killed")")
    }

    @Test("with OTEL_TRACES_EXPORTER=none, or without an OTLP endpoint, nothing is exported; a gRPC protocol is refused at start with the reason")
    func offUnlessAsked() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("quiet", on: admin)
        let receiver = try Receiver()
        let port = try EmbeddedCluster.freePort()
        // The endpoint given, but the exporter turned off.
        let gateway = try Self.serve(admin, port: port, otlpPort: receiver.port, ["OTEL_TRACES_EXPORTER": "none"])
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
        for _ in 0..<5 {
            _ = try await Self.call(port: port, token: token.string, traceParent: "00-\(Self.randomHex(bytes: 16))-\(Self.randomHex(bytes: 8))-01", "{ me { userRecordName } }")
        }
        await gateway.stop()
        // Stopped: anything batched would have been sent by now.
        let spans = await receiver.spans(within: .seconds(2)) { !$0.isEmpty }
        #expect(spans.isEmpty, "spans were exported with OTEL_TRACES_EXPORTER=none: \(spans)")

        let refused = try CanopyBinary.serve(databaseURL: admin.url, port: try EmbeddedCluster.freePort(), ["--no-console"], environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(receiver.port)", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        ])
        let result = try await refused.wait(within: .seconds(60))
        #expect(result.status != 0, "canopy serve started with a gRPC protocol it does not have")
        #expect(result.output.contains("OTLP/HTTP only"), "\(result.output)")
    }
}

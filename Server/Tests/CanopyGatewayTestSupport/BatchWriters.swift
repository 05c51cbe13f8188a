import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Synchronization
import Testing

/// Writers that send atomic batches of five new records, each to a zone of
/// its own (`w0`, `w1`, …), as the failure tests drive a gateway while a
/// part of the system dies. Every batch's outcome is kept, to be held
/// against what the database has afterwards: nothing acknowledged lost,
/// nothing half there.
final class BatchWriters: Sendable {
    static let recordsPerBatch = 5

    /// What one batch came to.
    enum Outcome: Sendable, Equatable {
        case acknowledged
        case unavailable(retryAfter: Bool)
        /// Refused because a statement ran past the statement timeout
        /// (`LIMIT_EXCEEDED`): PostgreSQL cancelled it and the transaction
        /// rolled back, so the batch is not there. A loaded machine with the
        /// fault tests' 2 s timeout meets it (a clean-clone CI run did).
        case statementTimeout
        /// No HTTP answer at all (the gateway's process died, or the
        /// connection was refused): the batch may or may not be there.
        case noAnswer
        case other(String)
    }

    struct Attempt: Sendable {
        var writer: Int
        var batch: Int
        var started: ContinuousClock.Instant
        var took: Duration
        var outcome: Outcome
        /// A 503 that said the write's COMMIT had been sent
        /// (`extensions.outcomeUnknown`): the batch may be there, whole.
        var outcomeUnknown = false
    }

    /// What the gateway answered to one POST /graphql.
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var retryAfter: Bool
        var body: ByteBuffer
    }

    /// POSTs a body to /graphql with the writer's token; throws when no
    /// answer came.
    typealias Send = @Sendable (ByteBuffer) async throws -> Answer

    let writers: Int
    let attempts = Mutex<[Attempt]>([])
    let stopped = Atomic<Bool>(false)
    /// When the fault (a kill, a crash) was made.
    let faultMoment = Mutex<ContinuousClock.Instant?>(nil)

    init(writers: Int = 8) {
        self.writers = writers
    }

    var all: [Attempt] { attempts.withLock { $0 } }
    var acknowledged: [Attempt] { all.filter { $0.outcome == .acknowledged } }
    var unavailable: [Attempt] { all.filter { if case .unavailable = $0.outcome { true } else { false } } }
    var unanswered: [Attempt] { all.filter { $0.outcome == .noAnswer } }
    var others: [Attempt] { all.filter { if case .other = $0.outcome { true } else { false } } }
    var timedOut: [Attempt] { all.filter { $0.outcome == .statementTimeout } }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Notes that the fault is made now, and returns the moment.
    @discardableResult
    func markFault() -> ContinuousClock.Instant {
        let now = ContinuousClock.now
        faultMoment.withLock { $0 = now }
        return now
    }

    var faultAt: ContinuousClock.Instant? { faultMoment.withLock { $0 } }

    /// Whether a batch started after `instant` was acknowledged.
    func acknowledged(after instant: ContinuousClock.Instant) -> Bool {
        attempts.withLock { $0.contains { $0.started > instant && $0.outcome == .acknowledged } }
    }

    /// Waits until a batch started after `instant` is acknowledged (false
    /// when `limit` passes first).
    func waitForAcknowledgement(after instant: ContinuousClock.Instant, within limit: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if acknowledged(after: instant) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Makes the writers' zones. A 503 (the gateway's pool still finding
    /// the primary of a multi-host URL on a loaded machine: one CI run got
    /// it for every zone) is sent again, as a client backing off would, for
    /// up to 60 s; the faults come after.
    func makeZones(send: Send) async throws {
        for writer in 0..<writers {
            let body = try JSONSerialization.data(withJSONObject: ["query": "mutation { saveZone(zoneName: \"w\(writer)\") { zoneName } }"])
            let deadline = ContinuousClock.now + .seconds(60)
            var answer = try await send(ByteBuffer(bytes: body))
            while answer.status == .serviceUnavailable && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(500))
                answer = try await send(ByteBuffer(bytes: body))
            }
            #expect(answer.status == .ok, "saveZone w\(writer): \(String(buffer: answer.body))")
        }
    }

    /// Runs every writer until `stop()`; a writer pauses 200 ms after a
    /// batch that was not acknowledged, as a client backing off would.
    func run(send: @escaping Send) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var batch = 0
                    while !self.stopped.load(ordering: .relaxed) {
                        let attempt = await Self.write(batch: batch, writer: writer, send: send)
                        self.attempts.withLock { $0.append(attempt) }
                        batch += 1
                        if attempt.outcome != .acknowledged { try await Task.sleep(for: .milliseconds(200)) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Runs the writers (and `follower`, when given) with `fault` beside
    /// them, started after 2 s of traffic; stops them all when `fault`
    /// returns, and returns what it returned.
    func run<T: Sendable>(
        send: @escaping Send, following follower: FeedFollower? = nil, fault: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await self.run(send: send); return nil }
            if let follower {
                group.addTask { try await follower.follow(send: send); return nil }
            }
            group.addTask {
                defer { self.stop(); follower?.stop() }
                try await Task.sleep(for: .seconds(2))
                return try await fault()
            }
            var result: T?
            for try await value in group where value != nil { result = value }
            return result!
        }
    }

    /// One atomic batch of five new records, and what came of it.
    static func write(batch: Int, writer: Int, send: Send) async -> Attempt {
        let records = (0..<recordsPerBatch).map { index -> [String: Any] in
            ["recordName": "b\(batch)-r\(index)", "recordType": "Entry", "fields": ["writer": writer, "batch": batch]]
        }
        let body = try! JSONSerialization.data(withJSONObject: [
            "query": """
                mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: "w\(writer)"}, save: $s, atomic: true) {
                  saved { recordName } errors { recordName code } } }
                """,
            "variables": ["s": records],
        ])
        let started = ContinuousClock.now
        let outcome: Outcome
        var outcomeUnknown = false
        do {
            let answer = try await send(ByteBuffer(bytes: body))
            let json = (try? JSONSerialization.jsonObject(with: Data(buffer: answer.body))) as? [String: Any] ?? [:]
            outcomeUnknown = ((json["errors"] as? [[String: Any]])?.first?["extensions"] as? [String: Any])?["outcomeUnknown"] as? Bool ?? false
            let saved = ((json["data"] as? [String: Any])?["modifyRecords"] as? [String: Any])?["saved"] as? [[String: Any]]
            let firstError = (json["errors"] as? [[String: Any]])?.first
            if answer.status == .serviceUnavailable {
                outcome = .unavailable(retryAfter: answer.retryAfter)
            } else if answer.status == .ok, (firstError?["extensions"] as? [String: Any])?["code"] as? String == "LIMIT_EXCEEDED",
                      (firstError?["message"] as? String)?.contains("statement timeout") == true {
                outcome = .statementTimeout
            } else if answer.status == .ok, saved?.count == recordsPerBatch {
                outcome = .acknowledged
            } else {
                outcome = .other("\(answer.status.code) \(String(buffer: answer.body).prefix(300))")
            }
        } catch {
            outcome = .noAnswer
        }
        return Attempt(writer: writer, batch: batch, started: started, took: ContinuousClock.now - started, outcome: outcome,
                       outcomeUnknown: outcomeUnknown)
    }

    /// How many records each batch has in `endpoint`'s database, by
    /// "w<writer>/b<batch>".
    static func batchCounts(on endpoint: DatabaseEndpoint) async throws -> [String: Int64] {
        try await TestDatabase.withConnection(endpoint) { connection in
            let rows = try await connection.query("""
                SELECT z.name, split_part(r.record_name, '-', 1), count(*) FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id
                WHERE z.name LIKE 'w%' GROUP BY 1, 2
                """, logger: TestDatabase.logger)
            var counts: [String: Int64] = [:]
            for try await (zone, batch, count) in rows.decode((String, String, Int64).self) { counts["\(zone)/\(batch)"] = count }
            return counts
        }
    }

    /// Every acknowledged batch whole in `counts`, and no batch half there.
    func expectWholeBatches(_ counts: [String: Int64], sourceLocation: SourceLocation = #_sourceLocation) {
        let lost = acknowledged.filter { counts["w\($0.writer)/b\($0.batch)"] != Int64(Self.recordsPerBatch) }
        #expect(lost.isEmpty, "acknowledged batches not whole: \(lost.prefix(5).map { "w\($0.writer)/b\($0.batch): \(counts["w\($0.writer)/b\($0.batch)"] ?? 0)" })",
                sourceLocation: sourceLocation)
        let half = counts.filter { $0.value != Int64(Self.recordsPerBatch) }
        #expect(half.isEmpty, "batches half there: \(half.prefix(5))", sourceLocation: sourceLocation)
    }

    /// No batch answered 503 without `outcomeUnknown` is there at all: the
    /// gateway said it was not applied, so it must never be applied later
    /// (a transaction left running past its deadline that commits after).
    func expectRefusedAbsent(_ counts: [String: Int64], sourceLocation: SourceLocation = #_sourceLocation) {
        let applied = (unavailable + timedOut).filter { !$0.outcomeUnknown && counts["w\($0.writer)/b\($0.batch)", default: 0] > 0 }
        #expect(applied.isEmpty, "batches answered 503 (not applied) that are there: \(applied.prefix(5).map { "w\($0.writer)/b\($0.batch)" })",
                sourceLocation: sourceLocation)
    }

    /// Every batch answered, within `bound`: acknowledged, 503 with
    /// `Retry-After`, or refused past the statement timeout; nothing else.
    func expectEveryAnswer(within bound: Duration, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(unavailable.allSatisfy { $0.outcome == .unavailable(retryAfter: true) }, "a 503 without Retry-After", sourceLocation: sourceLocation)
        #expect(others.isEmpty && unanswered.isEmpty,
                "answers neither acknowledged nor 503: \((others + unanswered).prefix(5).map(\.outcome))", sourceLocation: sourceLocation)
        let longest = all.map(\.took).max() ?? .zero
        #expect(longest < bound, "an answer took \(longest)", sourceLocation: sourceLocation)
    }

    /// A line for the test's output: counts, and how long no write was acknowledged around `instant`.
    func summary(around instant: ContinuousClock.Instant) -> String {
        let all = all
        let resumedAt = Self.firstAcknowledgedEnd(after: instant, in: all)
        let lastBefore = all.filter { $0.outcome == .acknowledged && $0.started + $0.took <= instant }.map { $0.started + $0.took }.max()
        let gap = resumedAt.map { $0 - (lastBefore ?? instant) }
        return "\(all.count) batches, \(acknowledged.count) acknowledged, \(unavailable.count) answered 503 (\(unavailable.filter(\.outcomeUnknown).count) of them outcome unknown), \(timedOut.count) past the statement timeout, \(unanswered.count) unanswered, \(others.count) other; "
            + "writes resumed \(resumedAt.map { "\($0 - instant)" } ?? "never") after; "
            + "no acknowledged write for \(gap.map { "\($0)" } ?? "?"); longest answer \(all.map(\.took).max() ?? .zero)"
    }
}

extension BatchWriters {
    /// When the first batch started after `instant` was acknowledged: the
    /// writes resumed.
    static func firstAcknowledgedEnd(after instant: ContinuousClock.Instant, in attempts: [Attempt]) -> ContinuousClock.Instant? {
        attempts.filter { $0.started > instant && $0.outcome == .acknowledged }.map { $0.started + $0.took }.min()
    }

    /// The attempts that overlap the outage around `instant`, one line each
    /// ("w3 b41 +0.21 s -> +2.23 s 503"), for the test's output: what each
    /// writer saw while the part was down.
    func timeline(around instant: ContinuousClock.Instant) -> String {
        let all = all
        let resumedAt = Self.firstAcknowledgedEnd(after: instant, in: all) ?? instant
        func offset(_ moment: ContinuousClock.Instant) -> String { String(format: "%+.2f s", (moment - instant).inSeconds) }
        return all.filter { $0.started + $0.took >= instant - .milliseconds(300) && $0.started <= resumedAt }
            .sorted { $0.started < $1.started }
            .map { attempt in
                let outcome = switch attempt.outcome {
                case .acknowledged: "ok"
                case .unavailable(let retryAfter): retryAfter ? "503" : "503 without Retry-After"
                case .noAnswer: "no answer"
                case .statementTimeout: "statement timeout"
                case .other(let text): String(text.prefix(80))
                }
                return "w\(attempt.writer) b\(attempt.batch) \(offset(attempt.started)) -> \(offset(attempt.started + attempt.took)) \(outcome)"
            }
            .joined(separator: "\n")
    }
}

extension BatchWriters {
    /// `send` through a HummingbirdTesting client with a bearer token.
    static func send(through client: any TestClientProtocol, token: String) -> Send {
        { body in
            let response = try await client.execute(
                uri: "/graphql", method: .post,
                headers: [.contentType: "application/json", .authorization: "Bearer \(token)"], body: body
            )
            return Answer(status: response.status, retryAfter: response.headers[.retryAfter] != nil, body: response.body)
        }
    }
}

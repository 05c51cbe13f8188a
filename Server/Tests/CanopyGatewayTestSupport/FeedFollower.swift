import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import NIOCore
import PostgresNIO
import Synchronization
import Testing

/// Follows the change feeds of the batch writers' zones through a gateway,
/// from the zones' first (empty) state onward, as a syncing client would
/// while parts of the system die: it keeps its last token through errors
/// and asks again. What it was told is held against the database: every
/// committed record reported (none skipped), nothing reported that is not
/// there (none invented).
final class FeedFollower: Sendable {
    struct ZoneFeed: Sendable {
        var token: String?
        var changed: Set<String> = []
        var deleted: Set<String> = []
        var failures = 0
    }

    let zones: [String]
    let feeds: Mutex<[String: ZoneFeed]>
    let stopped = Atomic<Bool>(false)

    init(zones: [String]) {
        self.zones = zones
        feeds = Mutex(Dictionary(uniqueKeysWithValues: zones.map { ($0, ZoneFeed()) }))
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    var failures: Int { feeds.withLock { $0.values.map(\.failures).reduce(0, +) } }

    /// Asks each zone's feed once from its token; true when every zone
    /// answered with nothing more coming.
    func poll(send: BatchWriters.Send) async -> Bool {
        var caughtUp = true
        for zone in zones {
            let token = feeds.withLock { $0[zone]!.token }
            let body = try! JSONSerialization.data(withJSONObject: [
                "query": """
                    query($t: String) { zoneChanges(scope: PRIVATE, zone: {zoneName: "\(zone)"}, since: $t, limit: 200) {
                      changed { recordName } deleted { recordName } token moreComing } }
                    """,
                "variables": ["t": token as Any],
            ])
            guard let answer = try? await send(ByteBuffer(bytes: body)), answer.status == .ok,
                  let json = (try? JSONSerialization.jsonObject(with: Data(buffer: answer.body))) as? [String: Any],
                  let page = (json["data"] as? [String: Any])?["zoneChanges"] as? [String: Any],
                  let next = page["token"] as? String
            else {
                feeds.withLock { $0[zone]!.failures += 1 }
                caughtUp = false
                continue
            }
            let changed = (page["changed"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
            let deleted = (page["deleted"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
            feeds.withLock {
                $0[zone]!.token = next
                $0[zone]!.changed.formUnion(changed)
                $0[zone]!.deleted.formUnion(deleted)
            }
            if page["moreComing"] as? Bool != false { caughtUp = false }
        }
        return caughtUp
    }

    /// Polls every 100 ms until `stop()`.
    func follow(send: BatchWriters.Send) async throws {
        while !stopped.load(ordering: .relaxed) {
            _ = await poll(send: send)
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Polls until every feed is caught up (after the writers stopped).
    func drain(send: BatchWriters.Send, within limit: Duration = .seconds(30)) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if await poll(send: send) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Every record the database holds in each zone was reported, and
    /// nothing else; nothing was reported deleted (the writers delete none).
    func expectMatches(_ endpoint: DatabaseEndpoint, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let stored = try await TestDatabase.withConnection(endpoint) { connection in
            let rows = try await connection.query("""
                SELECT z.name, r.record_name FROM canopy.records r JOIN canopy.zones z ON z.id = r.zone_id WHERE z.name LIKE 'w%'
                """, logger: TestDatabase.logger)
            var names: [String: Set<String>] = [:]
            for try await (zone, record) in rows.decode((String, String).self) { names[zone, default: []].insert(record) }
            return names
        }
        let feeds = feeds.withLock { $0 }
        for zone in zones {
            let told = feeds[zone]?.changed ?? []
            let there = stored[zone] ?? []
            let skipped = there.subtracting(told)
            let invented = told.subtracting(there)
            #expect(skipped.isEmpty, "\(zone): \(skipped.count) committed records never reported, e.g. \(skipped.sorted().prefix(5))", sourceLocation: sourceLocation)
            #expect(invented.isEmpty, "\(zone): \(invented.count) reported records not in the database, e.g. \(invented.sorted().prefix(5))", sourceLocation: sourceLocation)
            #expect(feeds[zone]?.deleted.isEmpty ?? true, "\(zone): deletions reported, none made", sourceLocation: sourceLocation)
        }
    }
}

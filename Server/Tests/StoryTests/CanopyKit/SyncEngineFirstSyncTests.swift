@testable import CanopyGatewayTestSupport
import CanopyKit
import CanopyTestSupport
import Foundation
import Testing

/// A delegate that takes a while over each fetched page (an app storing
/// it), and may do something after the n-th, before passing it on.
actor SlowStore: SyncEngineDelegate {
    let store: LocalStore
    private let pause: Duration
    private var pages = 0
    private let afterPage: (@Sendable (Int) async -> Void)?

    init(_ store: LocalStore, pause: Duration = .milliseconds(5), afterPage: (@Sendable (Int) async -> Void)? = nil) {
        self.store = store
        self.pause = pause
        self.afterPage = afterPage
    }

    func handleEvent(_ event: SyncEngine.Event, syncEngine: SyncEngine) async {
        await store.handleEvent(event, syncEngine: syncEngine)
        if case .fetchedRecordZoneChanges = event {
            pages += 1
            try? await Task.sleep(for: pause)
            await afterPage?(pages)
        }
    }

    func nextRecordZoneChangeBatch(_ context: SyncEngine.SendChangesContext, syncEngine: SyncEngine) async -> SyncEngine.RecordZoneChangeBatch? {
        await store.nextRecordZoneChangeBatch(context, syncEngine: syncEngine)
    }
}

/// A first sync in ranges (issue 51; docs/CHANGE_FEEDS.md "A first sync in
/// ranges") through CanopyKit's SyncEngine against a live `canopy serve`.
@Suite("SyncEngine: a first sync in ranges", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct SyncEngineFirstSyncTests {
    static func fill(_ database: Database, _ zone: RecordZone.ID, count: Int, prefix: String = "r") async throws {
        for start in stride(from: 0, to: count, by: 400) {
            let records = (start..<min(start + 400, count)).map { index in
                let record = Record(recordType: "Fast", recordID: Record.ID(recordName: "\(prefix)\(index)", zoneID: zone))
                record["hours"] = index
                return record
            }
            let answer = try await database.modifyRecords(saving: records, deleting: [], savePolicy: .allKeys, atomically: false)
            #expect(answer.saveResults.values.allSatisfy { (try? $0.get()) != nil })
        }
    }

    /// The zone as the server has it now: name → change tag.
    static func serverCopy(_ database: Database, _ zone: RecordZone.ID) async throws -> [String: String] {
        var copy: [String: String] = [:]
        var token: ServerChangeToken?
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: zone, since: token, resultsLimit: 400)
            for record in page.modifications { copy[record.recordID.recordName] = record.recordChangeTag ?? "" }
            token = page.changeToken
            if !page.moreComing { return copy }
        }
    }

    static func localCopy(_ store: LocalStore) async -> [String: String] {
        Dictionary(uniqueKeysWithValues: await store.records.map { ($0.key.recordName, $0.value.recordChangeTag ?? "") })
    }

    static func configuration(_ database: Database, _ delegate: any SyncEngineDelegate, state: SyncEngine.State.Serialization? = nil,
                              ranges: Int = 4, retries: Int = 12) -> SyncEngine.Configuration {
        var configuration = SyncEngine.Configuration(database: database, stateSerialization: state, delegate: delegate, automaticallySync: false)
        configuration.firstSyncRanges = ranges
        configuration.pageSize = 100
        configuration.maximumRetries = retries
        return configuration
    }

    @Test("3,000 records in 4 ranges, while another device changes, deletes and adds records: after the tail the copy equals the zone")
    func equalUnderAWriter() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Ranges")).zoneID
        try await Self.fill(database, zone, count: 3000)
        let store = LocalStore()
        let slow = SlowStore(store)   // the engine holds its delegate weakly
        let engine = SyncEngine(Self.configuration(database, slow))
        let writer = Task {
            for step in 0..<30 {
                let changed = Record(recordType: "Fast", recordID: Record.ID(recordName: "r\((step * 97) % 3000)", zoneID: zone))
                changed["hours"] = -step
                let added = Record(recordType: "Fast", recordID: Record.ID(recordName: "new\(step)", zoneID: zone))
                added["hours"] = step
                _ = try await database.modifyRecords(saving: [changed, added], deleting: [Record.ID(recordName: "r\((step * 97 + 1500) % 3000)", zoneID: zone)],
                                                     savePolicy: .allKeys, atomically: false)
            }
        }
        try await engine.fetchChanges()
        try await writer.value
        try await engine.fetchChanges()   // the tail, after the writer finished
        let local = await Self.localCopy(store), expected = try await Self.serverCopy(database, zone)
        #expect(local.count == expected.count && local == expected, "only local: \(Set(local.keys).subtracting(expected.keys).sorted().prefix(8)), only on the server: \(Set(expected.keys).subtracting(local.keys).sorted().prefix(8)), versions differ: \(local.filter { expected[$0.key] != nil && expected[$0.key] != $0.value }.keys.sorted().prefix(8)); \(local.count) vs \(expected.count)")
        withExtendedLifetime(slow) {}
        #expect(await eventually { await store.serialization == engine.state.serialization })
        #expect(await store.serialization.map { String(decoding: try! JSONEncoder().encode($0), as: UTF8.self).contains("\"zoneRanges\":{}") } == true,
                "no first sync left under way")
        server.stop()
    }

    @Test("a gateway that dies after 7 pages of a ranged first sync: an engine made from the stored state carries on the ranges and ends equal, no page twice")
    func resumeFromStoredState() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Resume")).zoneID
        try await Self.fill(database, zone, count: 2400)
        let store = LocalStore()
        let killer = SlowStore(store) { page in if page == 7 { server.stop(signal: SIGKILL) } }
        let first = SyncEngine(Self.configuration(database, killer, retries: 0))
        await #expect(throws: (any Error).self) { try await first.fetchChanges() }
        #expect(await eventually { await store.serialization == first.state.serialization })
        let stored = try #require(await store.serialization)
        let text = String(decoding: try JSONEncoder().encode(stored), as: UTF8.self)
        withExtendedLifetime(killer) {}
        #expect(text.contains("\"zoneRanges\":{\""), "a first sync under way in the stored state: \(text.prefix(300))")
        let handed = await store.fetchedRecords
        #expect(handed >= 700 && handed < 2400, "\(handed)")

        try await server.startProcess()
        let restartedStore = LocalStore(await store.records)
        let second = SyncEngine(Self.configuration(database, restartedStore,
                                                   state: try JSONDecoder().decode(SyncEngine.State.Serialization.self, from: JSONEncoder().encode(stored))))
        try await second.fetchChanges()
        #expect(handed + (await restartedStore.fetchedRecords) == 2400, "each page handed over once across the restart")
        #expect(await Self.localCopy(restartedStore) == (try await Self.serverCopy(database, zone)), "the copy differs from the zone")
        server.stop()
    }

    @Test("a zone fetch that fails after its retries is fetched again by the next fetchChanges (the database token waits for its zones)")
    func failedZoneFetchedAgain() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Chain")).zoneID
        try await Self.fill(database, zone, count: 500)
        let store = LocalStore()
        let killer = SlowStore(store) { page in if page == 2 { server.stop(signal: SIGKILL) } }
        let engine = SyncEngine(Self.configuration(database, killer, ranges: 1, retries: 0))
        await #expect(throws: (any Error).self) { try await engine.fetchChanges() }
        try await server.startProcess()
        try await engine.fetchChanges()
        #expect(await store.fetchedRecords == 500)
        #expect(await Self.localCopy(store) == (try await Self.serverCopy(database, zone)), "the copy differs from the zone")
        withExtendedLifetime(killer) {}
        server.stop()
    }

    @Test("a record saved before the engine first fetched its zone, the zone then deleted and made again: the first fetch reports it deleted (fault run seed 14)")
    func savedBeforeFollowingAZoneMadeAgain() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Again")).zoneID
        let store = LocalStore()
        for ranges in [1, 4] {
            let engine = SyncEngine(Self.configuration(database, store, ranges: ranges))
            let mine = Record.ID(recordName: "mine-\(ranges)", zoneID: zone)
            await store.edit(mine, in: engine, ["hours": 1])
            try await engine.sendChanges()   // saved; the engine has not fetched the zone yet
            #expect(await store.records[mine]?.recordChangeTag != nil)
            // Another device deletes the zone and makes it again, with other records.
            try await database.deleteRecordZone(withID: zone)
            _ = try await database.save(RecordZone(zoneID: zone))
            try await Self.fill(database, zone, count: 250, prefix: "new\(ranges)-")
            try await engine.fetchChanges()
            #expect(await store.records[mine] == nil, "\(ranges) ranges: the record of the zone's old life is still in the copy")
            #expect(await Self.localCopy(store) == (try await Self.serverCopy(database, zone)), "\(ranges) ranges: the copy differs from the zone")
            #expect(await eventually { await store.serialization == engine.state.serialization })
            let text = await store.serialization.map { String(decoding: try! JSONEncoder().encode($0), as: UTF8.self) } ?? ""
            #expect(text.contains("\"savedUnfollowed\":{}"), "nothing left to watch: \(text.prefix(400))")
            try await database.deleteRecordZone(withID: zone)   // the next round starts from no zone followed
            _ = try await database.save(RecordZone(zoneID: zone))
            try await engine.fetchChanges()
        }
        server.stop()
    }

    @Test("a record saved before the engine first fetched its zone, the zone then deleted for good: the next fetch reports the zone deleted")
    func savedBeforeFollowingAZoneDeleted() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Gone")).zoneID
        let store = LocalStore()
        let engine = SyncEngine(Self.configuration(database, store))
        let mine = Record.ID(recordName: "mine", zoneID: zone)
        await store.edit(mine, in: engine, ["hours": 1])
        try await engine.sendChanges()
        try await database.deleteRecordZone(withID: zone)   // no feed from nothing lists it now
        try await engine.fetchChanges()
        #expect(await store.records[mine] == nil, "the record of the deleted zone is still in the copy")
        #expect(await eventually { await store.serialization == engine.state.serialization })
        let text = await store.serialization.map { String(decoding: try! JSONEncoder().encode($0), as: UTF8.self) } ?? ""
        #expect(text.contains("\"savedUnfollowed\":{}"), "nothing left to watch: \(text.prefix(400))")
        server.stop()
    }

    @Test("a zone followed while the database token is still nil, deleted before the next fetch: that fetch reports the zone deleted")
    func followedZoneDeletedBeforeTheDatabaseToken() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Gone")).zoneID
        try await Self.fill(database, zone, count: 120)
        let store = LocalStore()
        let first = SyncEngine(Self.configuration(database, store))
        try await first.fetchChanges()
        #expect(await store.records.count == 120)
        #expect(await eventually { await store.serialization == first.state.serialization })
        // As stored by an app killed after the zone's fetch, before the database token was stored.
        let serialization = try #require(await store.serialization)
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(serialization))
        var object = try #require(json as? [String: Any])
        #expect(object["databaseToken"] != nil && (object["zoneTokens"] as? [String: Any])?.isEmpty == false)
        object["databaseToken"] = nil
        let stored = try JSONDecoder().decode(SyncEngine.State.Serialization.self, from: JSONSerialization.data(withJSONObject: object))
        try await database.deleteRecordZone(withID: zone)
        let restartedStore = LocalStore(await store.records)
        let second = SyncEngine(Self.configuration(database, restartedStore, state: stored))
        try await second.fetchChanges()
        let left = await restartedStore.records.count
        #expect(left == 0, "the deleted zone's records are still in the copy: \(left)")
        server.stop()
    }
}

@testable import CanopyGatewayTestSupport
import CanopyKit
import CanopyTestSupport
import Foundation
import Testing

/// A delegate that keeps its records as an app replacing objects would (a
/// new `Record` for each edit, so a batch already out holds the old one),
/// and that can act at the moment a batch goes into flight.
actor ReplacingStore: SyncEngineDelegate {
    private(set) var records: [Record.ID: Record] = [:]
    private(set) var conflicts: [Record.ID] = []
    /// The states handed over while a batch was in flight.
    private(set) var statesInFlight: [SyncEngine.State.Serialization] = []
    private(set) var reachability: [Bool] = []
    /// Runs once, at the first `.stateUpdate` with a batch in flight.
    private var whenInFlight: (@Sendable (ReplacingStore, SyncEngine) async -> Void)?

    init(_ records: [Record.ID: Record] = [:]) { self.records = records }

    func onceInFlight(_ action: @escaping @Sendable (ReplacingStore, SyncEngine) async -> Void) { whenInFlight = action }

    /// A new record object holding `value`, queued.
    func edit(_ id: Record.ID, _ value: Int, in engine: SyncEngine) {
        let record = records[id]?.copy() ?? Record(recordType: "Fast", recordID: id)
        record["hours"] = value
        records[id] = record
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(id)])
    }

    func handleEvent(_ event: SyncEngine.Event, syncEngine: SyncEngine) async {
        switch event {
        case .stateUpdate(let state):
            if !syncEngine.state.inFlight.isEmpty { statesInFlight.append(state) }
            if !syncEngine.state.inFlight.isEmpty, let action = whenInFlight {
                whenInFlight = nil
                await action(self, syncEngine)
            }
        case .serverReachabilityChanged(let reachable):
            reachability.append(reachable)
        case .sentRecordZoneChanges(let saved, let failed, _, _):
            // The saved version's tag on the local copy (a newer edit made
            // meanwhile is a newer object, which still needs it).
            for record in saved { records[record.recordID]?.setRecordChangeTag(record.recordChangeTag) }
            for failure in failed where failure.error.code == .serverRecordChanged {
                guard let server = failure.error.serverRecord else { continue }
                conflicts.append(failure.record.recordID)
                server["hours"] = records[failure.record.recordID]?["hours"]
                records[server.recordID] = server
                syncEngine.state.add(pendingRecordZoneChanges: [.saveRecord(server.recordID)])
            }
        default:
            break
        }
    }

    func nextRecordZoneChangeBatch(_ context: SyncEngine.SendChangesContext, syncEngine: SyncEngine) async -> SyncEngine.RecordZoneChangeBatch? {
        let records = self.records
        return await SyncEngine.RecordZoneChangeBatch(pendingChanges: syncEngine.state.pendingRecordZoneChanges, context: context) { records[$0] }
    }
}

/// A delegate that changes its record objects in place (as the fault run's
/// device does, and CKRecord apps often do), and notes the value of each
/// save the engine reports.
actor InPlaceStore: SyncEngineDelegate {
    private(set) var records: [Record.ID: Record] = [:]
    private(set) var savedHours: [Int] = []
    private var whenInFlight: (@Sendable (InPlaceStore, SyncEngine) async -> Void)?

    func onceInFlight(_ action: @escaping @Sendable (InPlaceStore, SyncEngine) async -> Void) { whenInFlight = action }

    /// The same record object, changed to hold `value`, queued.
    func edit(_ id: Record.ID, _ value: Int, in engine: SyncEngine) {
        let record = records[id] ?? Record(recordType: "Fast", recordID: id)
        record["hours"] = value
        records[id] = record
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(id)])
    }

    func handleEvent(_ event: SyncEngine.Event, syncEngine: SyncEngine) async {
        switch event {
        case .stateUpdate:
            if !syncEngine.state.inFlight.isEmpty, let action = whenInFlight {
                whenInFlight = nil
                await action(self, syncEngine)
            }
        case .sentRecordZoneChanges(let saved, _, _, _):
            savedHours += saved.compactMap { $0["hours"] as? Int }
        default:
            break
        }
    }

    func nextRecordZoneChangeBatch(_ context: SyncEngine.SendChangesContext, syncEngine: SyncEngine) async -> SyncEngine.RecordZoneChangeBatch? {
        let records = self.records
        return await SyncEngine.RecordZoneChangeBatch(pendingChanges: syncEngine.state.pendingRecordZoneChanges, context: context) { records[$0] }
    }
}

/// Issue 50's cases for CanopyKit's engine, each against a live gateway;
/// the randomized fault run (clients/js/test/fault, `--engines swift`)
/// puts the same engine through them at random.
@Suite("SyncEngine: no edit lost", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct SyncEngineNoEditLostTests {
    /// Alice on a live gateway with her zone "Fasting", and an engine that
    /// does not sync by itself over a `ReplacingStore`.
    struct Fixture {
        let server: LiveServer
        let alice: (container: Container, userRecordName: String, token: String)
        let database: Database
        let zone: RecordZone.ID
        let store: ReplacingStore
        let engine: SyncEngine

        /// A live gateway, Alice, and her zone "Fasting", for a test that makes its own engine.
        static func aliceWithZone() async throws -> (server: LiveServer, alice: (container: Container, userRecordName: String, token: String),
                                                      database: Database, zone: RecordZone.ID) {
            let server = try await LiveServer.start()
            let alice = try server.user("alice")
            let database = alice.container.privateCloudDatabase
            let zone = try await database.save(RecordZone(zoneName: "Fasting")).zoneID
            return (server, alice, database, zone)
        }

        static func make() async throws -> Fixture {
            let (server, alice, database, zone) = try await aliceWithZone()
            let store = ReplacingStore()
            let engine = SyncEngine(.init(database: database, stateSerialization: nil, delegate: store, automaticallySync: false))
            return Fixture(server: server, alice: alice, database: database, zone: zone, store: store, engine: engine)
        }
    }

    @Test("an edit queued while its record's earlier save is out stays queued, and reaches the server")
    func editedWhileInFlight() async throws {
        let fixture = try await Fixture.make()
        let (database, store, engine) = (fixture.database, fixture.store, fixture.engine)
        let id = Record.ID(recordName: "f1", zoneID: fixture.zone)
        await store.edit(id, 1, in: engine)
        // The person types again while the batch with 1 is out.
        await store.onceInFlight { store, engine in await store.edit(id, 2, in: engine) }
        // The answer for 1 leaves the newer edit queued, and the same send carries it next.
        try await engine.sendChanges()
        #expect(try await database.record(for: id)["hours"] as? Int == 2, "the edit made while 1 was out reached the server")
        #expect(engine.state.pendingRecordZoneChanges.isEmpty && engine.state.inFlight.isEmpty)
        #expect(await store.conflicts.isEmpty)
    }

    @Test("a record changed in place while its batch waits to be sent again goes as the batch was made: the newer value is the next send's (seed 131)")
    func changedInPlaceWhileRetrying() async throws {
        let (server, _, database, zone) = try await Fixture.aliceWithZone()
        let id = Record.ID(recordName: "f1", zoneID: zone)
        let store = InPlaceStore()
        let engine = SyncEngine(.init(database: database, stateSerialization: nil, delegate: store, automaticallySync: false))
        await store.edit(id, 1, in: engine)
        // As the batch with 1 leaves (stored with 1), the gateway dies: the
        // send fails and is tried again. Meanwhile the app changes the same
        // object to 2 and queues it; the gateway comes back.
        await store.onceInFlight { store, engine in
            server.stop(signal: SIGKILL)
            await store.edit(id, 2, in: engine)
            Task { try await server.startProcess() }
        }
        try await engine.sendChanges()
        #expect(await store.savedHours == [1, 2], "the retry sent 1, as stored with the batch in flight; then 2 went")
        #expect(try await database.record(for: id)["hours"] as? Int == 2)
        #expect(engine.state.pendingRecordZoneChanges.isEmpty && engine.state.inFlight.isEmpty)
        #expect(await engine.retries > 0, "the batch was sent again")
    }

    @Test("a batch sent, committed, and sent again from the state stored mid-send counts as saved: no conflict, no second write")
    func restartedMidSend() async throws {
        let fixture = try await Fixture.make()
        let (database, first, engine) = (fixture.database, fixture.store, fixture.engine)
        let id = Record.ID(recordName: "f1", zoneID: fixture.zone)
        await first.edit(id, 7, in: engine)
        // What the app stored as the batch left: the process "dies" there.
        let storedRecords = await first.records.mapValues { $0.copy() }
        try await engine.sendChanges()
        let midSend = try #require(await first.statesInFlight.first)
        let saved = try await database.record(for: id)

        let restartedStore = ReplacingStore(storedRecords)
        let restarted = SyncEngine(.init(database: database, stateSerialization: midSend, delegate: restartedStore, automaticallySync: false))
        #expect(restarted.state.inFlight == [.saveRecord(id)] && restarted.state.pendingRecordZoneChanges == [.saveRecord(id)])
        try await restarted.sendChanges()
        #expect(await restartedStore.conflicts.isEmpty, "the engine's own earlier write is not a conflict")
        #expect(restarted.state.pendingRecordZoneChanges.isEmpty && restarted.state.inFlight.isEmpty)
        let after = try await database.record(for: id)
        #expect(after.recordChangeTag == saved.recordChangeTag, "written once")
        #expect(await restartedStore.records[id]?.recordChangeTag == saved.recordChangeTag, "the local copy took the server's tag")
    }

    @Test("a zone named with its owner's record name in the private database is the zone the engine names: one key")
    func oneKeyPerZone() async throws {
        let fixture = try await Fixture.make()
        let engine = fixture.engine
        let spelled = RecordZone.ID(zoneName: "Fasting", ownerName: fixture.alice.userRecordName)
        #expect(engine.canonical(spelled) == RecordZone.ID(zoneName: "Fasting"))
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(Record.ID(recordName: "f1", zoneID: spelled))])
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(Record.ID(recordName: "f1", zoneID: RecordZone.ID(zoneName: "Fasting")))])
        #expect(engine.state.pendingRecordZoneChanges == [.saveRecord(Record.ID(recordName: "f1", zoneID: RecordZone.ID(zoneName: "Fasting")))],
                "one change, under the name the database's answers use")
    }

    @Test("a save whose record the app no longer has (it went with its zone) leaves the queue: the queue can empty")
    func saveWithoutRecordLeaves() async throws {
        let fixture = try await Fixture.make()
        let (database, zone, store, engine) = (fixture.database, fixture.zone, fixture.store, fixture.engine)
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(Record.ID(recordName: "gone", zoneID: zone))])
        await store.edit(Record.ID(recordName: "kept", zoneID: zone), 3, in: engine)
        try await engine.sendChanges()
        #expect(engine.state.pendingRecordZoneChanges.isEmpty)
        #expect(try await database.record(for: Record.ID(recordName: "kept", zoneID: zone))["hours"] as? Int == 3)
    }

    @Test("with automatic sync, a gateway away for longer than every retry: the app is told it waits, and the change goes out by itself when it returns")
    func resumesByItself() async throws {
        let (server, _, database, zone) = try await Fixture.aliceWithZone()
        let id = Record.ID(recordName: "f1", zoneID: zone)
        let store = ReplacingStore()
        var configuration = SyncEngine.Configuration(database: database, stateSerialization: nil, delegate: store, automaticallySync: true)
        configuration.maximumRetries = 1  // its retries run out within seconds
        let engine = SyncEngine(configuration)
        defer { Task { await engine.stop() } }
        try await Task.sleep(for: .milliseconds(500))  // listening
        server.stop(signal: SIGKILL)
        await store.edit(id, 5, in: engine)
        #expect(await eventually { await store.reachability.last == false }, "told the server cannot be reached")
        // Away well past the retries (two attempts, about a second).
        try await Task.sleep(for: .seconds(4))
        #expect(!engine.state.pendingRecordZoneChanges.isEmpty)
        try await server.startProcess()
        // Nobody edits, nobody calls send.
        #expect(await eventually(timeout: .seconds(90)) { engine.state.pendingRecordZoneChanges.isEmpty }, "the queue went out by itself")
        #expect(try await database.record(for: id)["hours"] as? Int == 5)
        #expect(await store.reachability.last == true)
    }
}

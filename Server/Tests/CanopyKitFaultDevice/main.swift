// One CanopyKit device of the randomized fault run (clients/js/test/fault,
// docs/SYNC_FAULTS.md): the Swift twin of device.js, speaking the same
// commands as JSON lines on stdin and stdout so the one driver (run.js)
// puts both engines through the same faults. An app with a local copy of
// one zone and a SyncEngine syncing automatically, storing its copy and
// the engine's state together in one file (written whole and renamed) at
// every `.stateUpdate`, as an app keeping both in one SQLite transaction
// would. It edits when told and answers "queued" only once the engine's
// stateUpdate holding the edit is stored. Conflicts merge as an app's
// should: the server's record with this device's own field on top; an edit
// of a record another device deleted (with its zone) wins, and saves it
// again as new; other refusals show the server's copy again (refetch).
//
// argv[1]: a JSON {name, baseURL, scope, zone: {zoneName, ownerName}, file, field, token}.

import CanopyKit
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct Options: Decodable {
    struct Zone: Decodable { var zoneName: String; var ownerName: String? }
    var name: String
    var baseURL: String
    var scope: String
    var zone: Zone
    var file: String
    var field: String
    var token: String
    /// Die at the k-th state stored while a first sync in ranges is under way.
    var dieMidRange: Int?
}

/// What the device keeps on disk: the engine's state and its records.
struct Stored: Codable {
    struct StoredRecord: Codable {
        var recordType: String
        var changeTag: String?
        var fields: [String: Int64]
    }
    var state: SyncEngine.State.Serialization?
    var records: [String: StoredRecord]
    /// Records refused and not yet read again (``Device/refetch(_:engine:)``).
    var refetch: [String]?
}

/// Lines to the driver, whole and one at a time.
enum Output {
    private static let lock = NSLock()
    static func send(_ message: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys]) else { return }
        lock.withLock {
            FileHandle.standardOutput.write(data)
            FileHandle.standardOutput.write(Data("\n".utf8))
        }
    }
}

/// The bearer token: the driver's, and a new one from it after a refusal.
actor Tokens {
    private var token: String
    private var waiting: [CheckedContinuation<Void, Never>] = []
    init(_ token: String) { self.token = token }

    func current(refresh: Bool) async -> String {
        if refresh {
            await withCheckedContinuation { continuation in
                waiting.append(continuation)
                Output.send(["type": "needToken"])
            }
        }
        return token
    }

    func received(_ token: String) {
        self.token = token
        for continuation in waiting { continuation.resume() }
        waiting = []
    }
}

actor Device: SyncEngineDelegate {
    let options: Options
    let zone: RecordZone.ID
    /// The local copy: recordName → record, of the one zone.
    private var records: [String: Record] = [:]
    private var storedState: SyncEngine.State.Serialization?
    /// Records refused and not yet read again, kept in the stored file: a
    /// device killed before the server answered reads them again when it
    /// starts, or its copy would keep a record the server does not have
    /// (the fault run found that).
    private var toRefetch: Set<String> = []
    private var dieWhenInFlight = false
    private var midRangeStates = 0
    private var dieOnAnswer = false

    init(_ options: Options) throws {
        self.options = options
        // The zone as the run spells it (the private database's with its
        // owner's record name, as an app may), named as the engine names it.
        let spelled = RecordZone.ID(zoneName: options.zone.zoneName, ownerName: options.zone.ownerName ?? CurrentUserDefaultName)
        zone = SyncEngine.canonical(spelled, in: options.scope == "SHARED" ? .shared : .private)
        if let data = FileManager.default.contents(atPath: options.file) {
            let stored = try JSONDecoder().decode(Stored.self, from: data)
            storedState = stored.state
            toRefetch = Set(stored.refetch ?? [])
            for (name, saved) in stored.records {
                let record = Record(recordType: saved.recordType, recordID: Record.ID(recordName: name, zoneID: zone))
                for (key, value) in saved.fields { record[key] = value }
                record.setRecordChangeTag(saved.changeTag)
                records[name] = record
            }
        }
    }

    var initialState: SyncEngine.State.Serialization? { storedState }

    func setDieWhenInFlight() { dieWhenInFlight = true }
    func setDieOnAnswer() { dieOnAnswer = true }

    /// The server's record with this device's own field from `mine` on top: how every merge here is made.
    private func underOwnField(_ server: Record, _ mine: Record?) -> Record {
        let merged = server.copy()
        if let own = mine?[options.field] { merged[options.field] = own }
        return merged
    }

    private func persist(_ state: SyncEngine.State.Serialization) {
        var stored = Stored(state: state, records: [:], refetch: toRefetch.sorted())
        for (name, record) in records {
            var fields: [String: Int64] = [:]
            for key in record.allKeys() {
                if case .int64(let number)? = record.fieldValue(forKey: key) { fields[key] = number }
            }
            stored.records[name] = .init(recordType: record.recordType, changeTag: record.recordChangeTag, fields: fields)
        }
        do {
            let temporary = options.file + ".tmp"
            try JSONEncoder().encode(stored).write(to: URL(fileURLWithPath: temporary))
            _ = rename(temporary, options.file)
        } catch {
            Output.send(["type": "engineError", "code": "STORE", "message": "\(error)"])
        }
    }

    private func pending(_ engine: SyncEngine) -> [String: String] {
        var pending: [String: String] = [:]
        for change in engine.state.pendingRecordZoneChanges {
            switch change {
            case .saveRecord(let id): pending[id.recordName] = "save"
            case .deleteRecord(let id): pending[id.recordName] = "delete"
            }
        }
        return pending
    }

    private func status(_ engine: SyncEngine) async -> [String: Any] {
        let reachable: Any = await engine.serverReachable.map { $0 as Any } ?? NSNull()
        return ["pending": engine.state.pendingRecordZoneChanges.count, "reachable": reachable]
    }

    /// Dies (SIGKILL) at the `dieMidRange`-th point a first sync in
    /// ranges is under way, having said so.
    private func dieIfMidRange() {
        guard let dieMidRange = options.dieMidRange else { return }
        midRangeStates += 1
        if midRangeStates == dieMidRange {
            Output.send(["type": "dyingMidRange"])
            kill(getpid(), SIGKILL)
        }
    }

    /// The records this device writes (its own, `<name>-n`, and any holding
    /// its field) as "field value / change tag", for the run's log.
    private func ownRecords() -> [String: String] {
        var own: [String: String] = [:]
        for (name, record) in records {
            let value: String
            if case .int64(let number)? = record.fieldValue(forKey: options.field) { value = String(number) }
            else if name.hasPrefix(options.name + "-") { value = "-" }
            else { continue }
            own[name] = "\(value)/\(record.recordChangeTag ?? "new")"
        }
        return own
    }

    /// Tells the run (its log, printed when a seed fails) how an event changed the records this device writes.
    private func trace(_ what: String, before: [String: String], engine: SyncEngine) {
        let after = ownRecords()
        guard after != before else { return }
        let waiting = pending(engine).filter { after[$0.key] != nil || before[$0.key] != nil }
        Output.send(["type": "trace", "text": "\(what): own records \(before.sorted { $0.key < $1.key }) → \(after.sorted { $0.key < $1.key }); waiting \(waiting.sorted { $0.key < $1.key })"])
    }

    /// The engine's hold on the zone as last traced: the database token,
    /// the zone's token and its first sync's ranges, each shortened.
    private var lastHold = ""

    /// Tells the run when the engine's hold on the zone changes (a token
    /// set or forgotten, a first sync started or finished), so a failing
    /// seed's log shows where each fetch of the zone started from.
    private func traceHold(_ state: SyncEngine.State.Serialization) {
        guard let data = try? JSONEncoder().encode(state),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return }
        func short(_ token: Any?) -> String {
            guard let token = token as? [String: Any], let value = token["value"] as? String else { return "nil" }
            return String(value.suffix(8))
        }
        let key = "\(zone.ownerName)/\(zone.zoneName)"
        let ranges = ((object["zoneRanges"] as? [String: Any])?[key] as? [String: Any]).map { fetch in
            "position \(short(fetch["position"])), \(((fetch["ranges"] as? [Any]) ?? []).filter { !($0 is NSNull) }.count) ranges left"
        } ?? "none"
        let hold = "database \(short(object["databaseToken"])), zone \(short((object["zoneTokens"] as? [String: Any])?[key])), first sync \(ranges)"
        guard hold != lastHold else { return }
        lastHold = hold
        Output.send(["type": "trace", "text": "hold: \(hold)"])
    }

    func handleEvent(_ event: SyncEngine.Event, syncEngine engine: SyncEngine) async {
        let before = ownRecords()
        defer { trace("\(event)".prefix(80).description, before: before, engine: engine) }
        switch event {
        case .fetchedDatabaseChanges, .changeTokenExpired:
            // Every zone-level event, whatever it changes.
            Output.send(["type": "trace", "text": "event \("\(event)".prefix(160))"])
        default:
            break
        }
        switch event {
        case .stateUpdate(let state):
            persist(state)
            traceHold(state)
            Output.send(["type": "status"].merging(await status(engine)) { $1 })
            if state.firstSyncsUnderWay > 0 { dieIfMidRange() }   // stored; dies before the next page
            if dieWhenInFlight && !engine.state.inFlight.isEmpty {
                // Mid-send: the request leaves after this; die while it is out.
                let delay = Int.random(in: 0..<30)
                Task.detached {
                    try? await Task.sleep(for: .milliseconds(delay))
                    kill(getpid(), SIGKILL)
                }
            }
        case .fetchedRecordZoneChanges(let zoneID, let modifications, let deletions):
            guard zoneID == zone else { return }
            // A page of a first sync in ranges counts as a point to die at
            // too: with every range read at once, the engine may store no
            // state between its pages (a run once had no interruption to
            // check). The page is then lost with the process, and read again.
            if engine.state.serialization.firstSyncsUnderWay > 0 { dieIfMidRange() }
            let waiting = pending(engine)
            for record in modifications {
                let name = record.recordID.recordName
                switch waiting[name] {
                case "delete": continue  // deleted here, not yet sent
                case "save": records[name] = underOwnField(record, records[name])  // an edit not yet sent, on the fetched version
                default: records[name] = record
                }
            }
            for deletion in deletions where waiting[deletion.recordID.recordName] != "save" {
                records[deletion.recordID.recordName] = nil
            }
        case .fetchedDatabaseChanges(_, let deletions):
            // The zone was deleted: its copy goes, but for the records with a
            // save still waiting. The edit may have been made after the zone
            // was made again under its name (the feed cannot say which): kept
            // as a new record, it lands in the new zone, or is refused as
            // .zoneNotFound when there is none. Dropping it lost edits (the
            // fault run's seed 47, CanopyJS).
            guard deletions.contains(zone) else { return }
            let waiting = pending(engine)
            records = records.filter { waiting[$0.key] == "save" }.mapValues { mine in
                let fresh = mine.copy()
                fresh.setRecordChangeTag(nil)
                return fresh
            }
        case .changeTokenExpired(let zoneID):
            // Fetched again from nothing; what waits to be sent is kept.
            guard zoneID == nil || zoneID == zone else { return }
            let waiting = pending(engine)
            records = records.filter { waiting[$0.key] != nil }
        case .sentRecordZoneChanges(let saved, let failedSaves, _, let failedDeletes):
            if dieOnAnswer { kill(getpid(), SIGKILL) }  // the answer came; the process dies before handling it
            let waiting = pending(engine)
            for record in saved where record.recordID.zoneID == zone {
                let name = record.recordID.recordName
                switch waiting[name] {
                case "delete": continue
                case "save": records[name] = underOwnField(record, records[name])  // edited again while this was out
                default: records[name] = record
                }
            }
            for failure in failedSaves {
                let name = failure.record.recordID.recordName
                if failure.error.code == .serverRecordChanged, let server = failure.error.serverRecord {
                    records[name] = underOwnField(server, records[name])
                    engine.state.add(pendingRecordZoneChanges: [.saveRecord(server.recordID)])
                } else if failure.error.code == .unknownItem, let mine = records[name] {
                    // Edited here while another device deleted it (with its
                    // zone): the edit wins, and the record comes back as new.
                    let fresh = mine.copy()
                    fresh.setRecordChangeTag(nil)
                    records[name] = fresh
                    engine.state.add(pendingRecordZoneChanges: [.saveRecord(fresh.recordID)])
                    Output.send(["type": "failure", "what": "save \(name) (saved again as new)", "code": failure.error.code.rawValue, "message": failure.error.message])
                } else {
                    Output.send(["type": "failure", "what": "save \(name)", "code": failure.error.code.rawValue, "message": failure.error.message])
                    refetch(failure.record.recordID, engine: engine)
                }
            }
            for (id, error) in failedDeletes {
                Output.send(["type": "failure", "what": "delete \(id.recordName)", "code": error.code.rawValue, "message": error.message])
                refetch(id, engine: engine)
            }
        case .serverReachabilityChanged:
            Output.send(["type": "status"].merging(await status(engine)) { $1 })
        default:
            break
        }
    }

    /// After a refusal (the record gone with a deleted zone, the zone no
    /// longer shared): the server's copy of the record, or none, in the
    /// local copy, as an app shows what is really there. Tried until the
    /// server answers.
    private func refetch(_ id: Record.ID, engine: SyncEngine) {
        if toRefetch.insert(id.recordName).inserted { persist(engine.state.serialization) }
        Task {
            while true {
                let server: Record?
                do {
                    server = try await engine.database.record(for: id)
                } catch let error as CanopyError where [.unknownItem, .zoneNotFound, .permissionFailure].contains(error.code) {
                    server = nil
                } catch {
                    try? await Task.sleep(for: .milliseconds(500))
                    continue
                }
                replace(id, with: server, engine: engine)
                return
            }
        }
    }

    private func replace(_ id: Record.ID, with server: Record?, engine: SyncEngine) {
        let before = ownRecords()
        defer { trace("refetched \(id.recordName)", before: before, engine: engine) }
        toRefetch.remove(id.recordName)
        // A newer change waiting wins over what the server has.
        let waiting = engine.state.pendingRecordZoneChanges.contains { $0.recordID.recordName == id.recordName }
        if !waiting { records[id.recordName] = server }
        persist(engine.state.serialization)
    }

    /// What was refused before a restart, read again.
    func refetchLeftovers(engine: SyncEngine) {
        for name in toRefetch { refetch(Record.ID(recordName: name, zoneID: zone), engine: engine) }
    }

    func nextRecordZoneChangeBatch(_ context: SyncEngine.SendChangesContext, syncEngine engine: SyncEngine) async -> SyncEngine.RecordZoneChangeBatch? {
        let records = self.records
        let zone = self.zone
        return await SyncEngine.RecordZoneChangeBatch(pendingChanges: engine.state.pendingRecordZoneChanges, context: context) { id in
            id.zoneID == zone ? records[id.recordName] : nil
        }
    }

    // MARK: Commands

    func edit(_ name: String, value: Int64, engine: SyncEngine) async {
        let before = ownRecords()
        defer { trace("edit \(name) = \(value)", before: before, engine: engine) }
        let record = records[name] ?? Record(recordType: "Item", recordID: Record.ID(recordName: name, zoneID: zone))
        record[options.field] = value
        records[name] = record
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(record.recordID)])
        await engine.stateStored()
    }

    func delete(_ name: String, engine: SyncEngine) async {
        let before = ownRecords()
        defer { trace("delete \(name)", before: before, engine: engine) }
        records[name] = nil
        engine.state.add(pendingRecordZoneChanges: [.deleteRecord(Record.ID(recordName: name, zoneID: zone))])
        await engine.stateStored()
    }

    func snapshot() -> [String: [String: Int64]] {
        records.mapValues { record in
            var fields: [String: Int64] = [:]
            for key in record.allKeys() {
                if case .int64(let number)? = record.fieldValue(forKey: key) { fields[key] = number }
            }
            return fields
        }
    }
}

// MARK: The process

let options: Options
do {
    options = try JSONDecoder().decode(Options.self, from: Data(CommandLine.arguments[1].utf8))
} catch {
    FileHandle.standardError.write(Data("usage: canopykit-fault-device '{\"name\": …}': \(error)\n".utf8))
    exit(2)
}
let tokens = Tokens(options.token)
let device = try Device(options)
// A request that goes unanswered fails after 15 s and is tried again: the run heals sooner.
let configuration = URLSessionConfiguration.ephemeral
configuration.timeoutIntervalForRequest = 15
let container = Container(baseURL: URL(string: options.baseURL)!, session: URLSession(configuration: configuration)) { refresh in
    await tokens.current(refresh: refresh)
}
let database = options.scope == "SHARED" ? container.sharedCloudDatabase : container.privateCloudDatabase
var engineConfiguration = SyncEngine.Configuration(database: database, stateSerialization: await device.initialState,
                                                   delegate: device, automaticallySync: true)
engineConfiguration.maximumRetries = 2
// Small pages, four ranges: a first sync of the run's zone is many pages, read in ranges.
engineConfiguration.pageSize = 50
engineConfiguration.firstSyncRanges = Int(ProcessInfo.processInfo.environment["CANOPY_FAULT_RANGES"] ?? "") ?? 4
let engine = SyncEngine(engineConfiguration)
await device.refetchLeftovers(engine: engine)

@MainActor
func handle(_ message: [String: Any]) async {
    let id = message["id"] ?? NSNull()
    switch message["type"] as? String {
    case "token":
        if let token = message["token"] as? String { await tokens.received(token) }
    case "edit":
        guard let name = message["recordName"] as? String, let value = message["value"] as? Int else { return }
        await device.edit(name, value: Int64(value), engine: engine)
        Output.send(["type": "queued", "id": id])
    case "delete":
        guard let name = message["recordName"] as? String else { return }
        await device.delete(name, engine: engine)
        Output.send(["type": "queued", "id": id])
    case "status":
        let hasPending = !engine.state.pendingRecordZoneChanges.isEmpty || !engine.state.pendingDatabaseChanges.isEmpty
        let reachable: Any = await engine.serverReachable.map { $0 as Any } ?? NSNull()
        Output.send(["type": "statusAnswer", "id": id, "pending": hasPending, "reachable": reachable])
    case "dieWhenInFlight":
        await device.setDieWhenInFlight()
    case "dieOnAnswer":
        await device.setDieOnAnswer()
    case "settle":
        // Heal: fetch, and send what waits, until nothing waits.
        let stuck = Task {
            try await Task.sleep(for: .seconds(45))
            Output.send(["type": "stuck", "pending": engine.state.pendingRecordZoneChanges.count, "retries": await engine.retries])
        }
        defer { stuck.cancel() }
        do {
            try await engine.fetchChanges()
            if !engine.state.pendingRecordZoneChanges.isEmpty { try await engine.sendChanges() }
            try await engine.fetchChanges()
            let pending = engine.state.pendingRecordZoneChanges.count
            Output.send(["type": "settled", "id": id, "pending": pending, "hasPending": pending > 0, "records": await device.snapshot()])
        } catch {
            Output.send(["type": "settled", "id": id, "error": "\(error)", "hasPending": true])
        }
    case "stop":
        await engine.stop()
        exit(0)
    default:
        break
    }
}

// Commands arrive on stdin, a JSON object a line; each runs as it comes, as
// device.js's do (a settle does not hold up a status).
let reader = Thread {
    while let line = readLine() {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
        nonisolated(unsafe) let message = object
        Task { await handle(message) }
    }
    exit(0)  // the driver is gone
}
reader.start()
Output.send(["type": "ready"])
while true { try await Task.sleep(for: .seconds(3600)) }

import CanopyKit
import Foundation

/// One fast as the app keeps it locally.
struct Fast: Codable, Sendable {
    var recordName: String
    var zoneName: String
    var ownerName: String
    var shared: Bool
    var endDate: Date
    var hours: Int
    var note: String?
    var tags: [String]
    var changeTag: String?
    var modifiedBy: String?

    var key: String { FastingLog.key(shared: shared, ownerName: ownerName, zoneName: zoneName, recordName: recordName) }
    var zoneID: RecordZone.ID { RecordZone.ID(zoneName: zoneName, ownerName: ownerName) }

    /// The CanopyKit record to send: the local fields, with the change tag last seen.
    var record: Record {
        let record = Record(recordType: "Fast", recordID: Record.ID(recordName: recordName, zoneID: zoneID))
        record["endDate"] = endDate
        record["hours"] = hours
        record["note"] = note
        record["tags"] = tags
        record.setRecordChangeTag(changeTag)
        return record
    }

    init(record: Record, shared: Bool) {
        recordName = record.recordID.recordName
        zoneName = record.recordID.zoneID.zoneName
        ownerName = record.recordID.zoneID.ownerName
        self.shared = shared
        endDate = record["endDate"] as? Date ?? Date(timeIntervalSince1970: 0)
        hours = record["hours"] as? Int ?? 0
        note = record["note"] as? String
        tags = record["tags"] as? [String] ?? []
        changeTag = record.recordChangeTag
        modifiedBy = record.lastModifiedUserRecordName
    }

    init(zoneID: RecordZone.ID, shared: Bool, endDate: Date, hours: Int, note: String?, tags: [String]) {
        recordName = "fast-" + UUID().uuidString.prefix(8).lowercased()
        zoneName = zoneID.zoneName
        ownerName = zoneID.ownerName
        self.shared = shared
        self.endDate = endDate
        self.hours = hours
        self.note = note
        self.tags = tags
    }
}

/// The local copy of the log and the two sync engines that keep it in step:
/// the private database (my log) and the shared one (logs others shared
/// with me). It is both engines' delegate, and saves itself to one file.
actor FastingLog: SyncEngineDelegate {
    static let zoneName = "Fasting"

    private struct Saved: Codable {
        var fasts: [String: Fast] = [:]
        var privateState: SyncEngine.State.Serialization?
        var sharedState: SyncEngine.State.Serialization?
        var zoneSaved = false
    }

    nonisolated let container: Container
    private let file: URL
    private var saved: Saved
    private var privateEngine: SyncEngine?
    private var sharedEngine: SyncEngine?
    /// Set by `sync --watch`: prints each change as it arrives and saves the file after each.
    var announce: (@Sendable (String) -> Void)?

    init(container: Container, file: URL) throws {
        self.container = container
        self.file = file
        if let data = try? Data(contentsOf: file) {
            do {
                saved = try JSONDecoder().decode(Saved.self, from: data)
            } catch {
                throw CanopyError(.invalidArguments, "\(file.path) is not a fasting profile (\(error)); move it away to start afresh")
            }
        } else {
            saved = Saved()
        }
    }

    static func key(shared: Bool, ownerName: String, zoneName: String, recordName: String) -> String {
        "\(shared ? "shared" : "private")/\(ownerName)/\(zoneName)/\(recordName)"
    }

    /// Makes the engines; with `automatic`, they listen to the server and send on their own.
    func start(automatic: Bool) {
        guard privateEngine == nil else { return }
        privateEngine = SyncEngine(.init(database: container.privateCloudDatabase, stateSerialization: saved.privateState,
                                         delegate: self, automaticallySync: automatic))
        sharedEngine = SyncEngine(.init(database: container.sharedCloudDatabase, stateSerialization: saved.sharedState,
                                        delegate: self, automaticallySync: automatic))
    }

    /// Fetches both databases and sends what is pending.
    func sync() async throws {
        start(automatic: false)
        try await privateEngine!.fetchChanges()
        try await sharedEngine!.fetchChanges()
        try await privateEngine!.sendChanges()
        try await sharedEngine!.sendChanges()
    }

    /// Adds a fast to my log, or to the one log someone shared with me.
    func add(hours: Int, endDate: Date, note: String?, tags: [String], shared: Bool, owner: String?) async throws -> Fast {
        start(automatic: false)
        let zoneID: RecordZone.ID
        if shared {
            try await sharedEngine!.fetchChanges()
            let owners = Set(saved.fasts.values.filter(\.shared).map(\.ownerName)).union(try await sharedLogOwners())
            let candidates = owners.filter { owner == nil || $0 == owner }.sorted()
            guard candidates.count == 1 else {
                throw CanopyError(.invalidArguments, candidates.isEmpty
                    ? "no log is shared with you\(owner.map { " by \($0)" } ?? ""): accept one first (fasting accept URL)"
                    : "several logs are shared with you (\(candidates.joined(separator: ", "))): pick one with --owner")
            }
            zoneID = RecordZone.ID(zoneName: Self.zoneName, ownerName: candidates[0])
        } else {
            try ensureZone()
            zoneID = RecordZone.ID(zoneName: Self.zoneName)
        }
        let fast = Fast(zoneID: zoneID, shared: shared, endDate: endDate, hours: hours, note: note, tags: tags)
        saved.fasts[fast.key] = fast
        let engine = shared ? sharedEngine! : privateEngine!
        engine.state.add(pendingRecordZoneChanges: [.saveRecord(Record.ID(recordName: fast.recordName, zoneID: zoneID))])
        try await engine.sendChanges()
        return saved.fasts[fast.key] ?? fast
    }

    /// The owners of Fasting zones in my shared database.
    private func sharedLogOwners() async throws -> [String] {
        try await container.sharedCloudDatabase.allRecordZones().map(\.zoneID).filter { $0.zoneName == Self.zoneName }.map(\.ownerName)
    }

    /// Queues the creation of my log's zone, once.
    func ensureZone() throws {
        start(automatic: false)
        if !saved.zoneSaved {
            privateEngine!.state.add(pendingDatabaseChanges: [.saveZone(RecordZone.ID(zoneName: Self.zoneName))])
        }
    }

    /// Sends what is pending in my private database (the zone first).
    func sendPrivate() async throws {
        start(automatic: false)
        try await privateEngine!.sendChanges()
    }

    var fasts: [Fast] { saved.fasts.values.sorted { ($0.endDate, $0.recordName) < ($1.endDate, $1.recordName) } }

    /// Writes the file (atomically: a crash leaves the old one whole).
    func persist() throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(saved).write(to: file, options: .atomic)
    }

    func close() async throws {
        await privateEngine?.stop()
        await sharedEngine?.stop()
        try persist()
    }

    // MARK: SyncEngineDelegate

    func handleEvent(_ event: SyncEngine.Event, syncEngine: SyncEngine) async {
        let shared = syncEngine.database.databaseScope == .shared
        switch event {
        case .stateUpdate(let state):
            if shared { saved.sharedState = state } else { saved.privateState = state }
        case .fetchedDatabaseChanges(_, let deletions):
            for zone in deletions {
                saved.fasts = saved.fasts.filter { $0.value.shared != shared || $0.value.zoneID != zone }
                announce?("- \(shared ? "the log \(zone.ownerName) shared" : "your log") is gone")
            }
        case .fetchedRecordZoneChanges(_, let modifications, let deletions):
            for record in modifications where record.recordType == "Fast" {
                let fast = Fast(record: record, shared: shared)
                let isNew = saved.fasts[fast.key] == nil
                saved.fasts[fast.key] = fast
                announce?("\(isNew ? "+" : "~") \(Self.line(fast))")
            }
            for deletion in deletions {
                let id = deletion.recordID
                if saved.fasts.removeValue(forKey: Self.key(shared: shared, ownerName: id.zoneID.ownerName, zoneName: id.zoneID.zoneName,
                                                            recordName: id.recordName)) != nil {
                    announce?("- \(id.recordName) deleted")
                }
            }
        case .changeTokenExpired(let zoneID):
            // The server forgot our place (a restore): drop that copy; a full fetch follows.
            saved.fasts = saved.fasts.filter { $0.value.shared != shared || (zoneID != nil && $0.value.zoneID != zoneID) }
        case .sentDatabaseChanges(let savedZones, _, _, _):
            if savedZones.contains(where: { $0.zoneName == Self.zoneName }) { saved.zoneSaved = true }
        case .sentRecordZoneChanges(let savedRecords, let failedRecordSaves, _, _):
            for record in savedRecords {
                let key = Self.key(shared: shared, ownerName: record.recordID.zoneID.ownerName, zoneName: record.recordID.zoneID.zoneName,
                                   recordName: record.recordID.recordName)
                saved.fasts[key]?.changeTag = record.recordChangeTag
            }
            for failure in failedRecordSaves {
                let id = failure.record.recordID
                let key = Self.key(shared: shared, ownerName: id.zoneID.ownerName, zoneName: id.zoneID.zoneName, recordName: id.recordName)
                if failure.error.code == .serverRecordChanged, let server = failure.error.serverRecord {
                    // Someone saved first: keep their change tag and our fields, and send again.
                    saved.fasts[key]?.changeTag = server.recordChangeTag
                    syncEngine.state.add(pendingRecordZoneChanges: [.saveRecord(id)])
                    announce?("! \(id.recordName) was changed by someone else; yours was sent again over theirs")
                } else {
                    announce?("! \(id.recordName) was not saved: \(failure.error)")
                    FileHandle.standardError.write(Data("fasting: \(id.recordName) was not saved: \(failure.error)\n".utf8))
                }
            }
        default:
            break
        }
        if announce != nil { try? persist() }
    }

    func nextRecordZoneChangeBatch(_ context: SyncEngine.SendChangesContext, syncEngine: SyncEngine) async -> SyncEngine.RecordZoneChangeBatch? {
        let shared = syncEngine.database.databaseScope == .shared
        let pending = syncEngine.state.pendingRecordZoneChanges
        guard !pending.isEmpty else { return nil }
        let fasts = saved.fasts
        return await SyncEngine.RecordZoneChangeBatch(pendingChanges: pending, context: context) { id in
            fasts[Self.key(shared: shared, ownerName: id.zoneID.ownerName, zoneName: id.zoneID.zoneName, recordName: id.recordName)]?.record
        }
    }

    static func line(_ fast: Fast) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        formatter.timeZone = TimeZone(identifier: "UTC")
        let whose = fast.shared ? "\(fast.ownerName.prefix(9))…'s log" : "my log"
        var text = "\(formatter.string(from: fast.endDate)) UTC  \(fast.hours) h  [\(whose)] \(fast.recordName)"
        if let note = fast.note { text += "  \(note)" }
        if !fast.tags.isEmpty { text += "  #" + fast.tags.joined(separator: " #") }
        return text
    }
}

import Foundation

extension SyncEngine {
    /// A record change waiting to be sent (CKSyncEngine.PendingRecordZoneChange).
    public enum PendingRecordZoneChange: Sendable, Hashable, Codable {
        case saveRecord(Record.ID)
        case deleteRecord(Record.ID)

        public var recordID: Record.ID {
            switch self {
            case .saveRecord(let id), .deleteRecord(let id): return id
            }
        }
    }

    /// A zone change waiting to be sent (CKSyncEngine.PendingDatabaseChange).
    public enum PendingDatabaseChange: Sendable, Hashable, Codable {
        case saveZone(RecordZone.ID)
        case deleteZone(RecordZone.ID)
    }

    /// What the engine knows between launches (CKSyncEngine.State): the
    /// feed positions it reached, the changes not yet sent and those sent
    /// but not yet answered. The app adds pending changes here; the engine
    /// sends them and removes what was answered. Every change to it is a
    /// `.stateUpdate` (docs/SYNC_FAULTS.md).
    public final class State: @unchecked Sendable {
        /// Everything the app must persist to resume without refetching or
        /// losing an edit (CKSyncEngine.State.Serialization); handed over in
        /// `.stateUpdate` events.
        public struct Serialization: Sendable, Codable, Equatable {
            var databaseToken: ServerChangeToken?
            var zoneTokens: [String: ServerChangeToken]
            var pendingRecordZoneChanges: [PendingRecordZoneChange]
            var pendingDatabaseChanges: [PendingDatabaseChange]
            /// Changes sent and not yet answered: the server may have them
            /// (a restart mid-send, an answer lost), so a conflict with the
            /// engine's own write is recognised when they are sent again.
            var inFlight: [PendingRecordZoneChange]
            /// First syncs in ranges under way, by zone key: each range's
            /// next token (nil once read), resumed after a restart.
            var zoneRanges: [String: RangedFetch]
            /// Records saved into a zone the engine did not follow yet (no
            /// token, no first sync under way), by zone key: name → type.
            /// Nothing tells which of the zone's lives the save reached: the
            /// zone's first full fetch reports each one it lacks as deleted
            /// (it went with a zone deleted before that fetch).
            var savedUnfollowed: [String: [String: String]]

            init(databaseToken: ServerChangeToken? = nil, zoneTokens: [String: ServerChangeToken] = [:],
                 pendingRecordZoneChanges: [PendingRecordZoneChange] = [], pendingDatabaseChanges: [PendingDatabaseChange] = [],
                 inFlight: [PendingRecordZoneChange] = [], zoneRanges: [String: RangedFetch] = [:],
                 savedUnfollowed: [String: [String: String]] = [:]) {
                self.databaseToken = databaseToken
                self.zoneTokens = zoneTokens
                self.pendingRecordZoneChanges = pendingRecordZoneChanges
                self.pendingDatabaseChanges = pendingDatabaseChanges
                self.inFlight = inFlight
                self.zoneRanges = zoneRanges
                self.savedUnfollowed = savedUnfollowed
            }

            /// How many zones' first syncs in ranges are under way (resumed by the next fetch).
            public var firstSyncsUnderWay: Int { zoneRanges.count }

            /// Reads states saved before `inFlight`, `zoneRanges` and `savedUnfollowed` existed too.
            public init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                self.init(databaseToken: try container.decodeIfPresent(ServerChangeToken.self, forKey: .databaseToken),
                          zoneTokens: try container.decodeIfPresent([String: ServerChangeToken].self, forKey: .zoneTokens) ?? [:],
                          pendingRecordZoneChanges: try container.decodeIfPresent([PendingRecordZoneChange].self, forKey: .pendingRecordZoneChanges) ?? [],
                          pendingDatabaseChanges: try container.decodeIfPresent([PendingDatabaseChange].self, forKey: .pendingDatabaseChanges) ?? [],
                          inFlight: try container.decodeIfPresent([PendingRecordZoneChange].self, forKey: .inFlight) ?? [],
                          zoneRanges: try container.decodeIfPresent([String: RangedFetch].self, forKey: .zoneRanges) ?? [:],
                          savedUnfollowed: try container.decodeIfPresent([String: [String: String]].self, forKey: .savedUnfollowed) ?? [:])
            }
        }

        /// A first sync read in ranges (``Database/recordZoneRanges(inZoneWith:count:)``):
        /// the position to follow once every range is read, and each range's next token.
        struct RangedFetch: Sendable, Codable, Equatable {
            var zoneID: RecordZone.ID
            var position: ServerChangeToken
            var ranges: [ServerChangeToken?]
        }

        private let lock = NSLock()
        private var value: Serialization
        /// How often each change was queued (this launch): a change queued
        /// again while it was out is newer than what was sent, and stays.
        private var generations: [PendingRecordZoneChange: Int] = [:]
        private let scope: Database.Scope
        /// Told after every change, so the engine can emit `.stateUpdate` and schedule a send.
        var onChange: (@Sendable (_ pendingAdded: Bool) -> Void)?

        init(_ serialization: Serialization?, scope: Database.Scope) {
            self.scope = scope
            value = serialization ?? Serialization()
            value.pendingRecordZoneChanges = value.pendingRecordZoneChanges.map(canonical)
            value.inFlight = value.inFlight.map(canonical)
        }

        /// A zone as the engine names it whatever the app wrote: in the
        /// private database the caller's own zones are
        /// `CurrentUserDefaultName`'s (the owner's record name names the
        /// same zone), as the database's answers name them.
        public func canonical(_ zoneID: RecordZone.ID) -> RecordZone.ID {
            SyncEngine.canonical(zoneID, in: scope)
        }

        func canonical(_ recordID: Record.ID) -> Record.ID {
            let zoneID = canonical(recordID.zoneID)
            return zoneID == recordID.zoneID ? recordID : Record.ID(recordName: recordID.recordName, zoneID: zoneID)
        }

        func canonical(_ change: PendingRecordZoneChange) -> PendingRecordZoneChange {
            switch change {
            case .saveRecord(let id): return .saveRecord(canonical(id))
            case .deleteRecord(let id): return .deleteRecord(canonical(id))
            }
        }

        func canonical(_ change: PendingDatabaseChange) -> PendingDatabaseChange {
            switch change {
            case .saveZone(let id): return .saveZone(canonical(id))
            case .deleteZone(let id): return .deleteZone(canonical(id))
            }
        }

        /// Sent, not yet answered.
        public var inFlight: [PendingRecordZoneChange] { lock.withLock { value.inFlight } }

        public var pendingRecordZoneChanges: [PendingRecordZoneChange] { lock.withLock { value.pendingRecordZoneChanges } }
        public var pendingDatabaseChanges: [PendingDatabaseChange] { lock.withLock { value.pendingDatabaseChanges } }
        public var serialization: Serialization { lock.withLock { value } }

        /// Queues record saves and deletes; a later change of a record
        /// replaces an earlier one. Zones are named canonically
        /// (``canonical(_:)-swift.method``), however the app named them.
        public func add(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            let changes = changes.map(canonical)
            update(pendingAdded: !changes.isEmpty) { value in
                for change in changes {
                    generations[change, default: 0] += 1
                    value.pendingRecordZoneChanges.removeAll { $0.recordID == change.recordID }
                    value.pendingRecordZoneChanges.append(change)
                }
            }
        }

        public func remove(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            let changes = Set(changes.map(canonical))
            update(pendingAdded: false) { value in value.pendingRecordZoneChanges.removeAll { changes.contains($0) } }
        }

        /// The batch about to leave is in flight, in the state the app
        /// stores before it does. Answers which queuing of each change is
        /// being sent, for ``answered(_:done:sent:)``.
        func markInFlight(_ changes: [PendingRecordZoneChange]) -> [PendingRecordZoneChange: Int] {
            let changes = changes.map(canonical)
            var sent: [PendingRecordZoneChange: Int] = [:]
            update(pendingAdded: false) { value in
                value.inFlight.removeAll { changes.contains($0) }
                value.inFlight.append(contentsOf: changes)
                for change in changes { sent[change] = generations[change, default: 0] }
            }
            return sent
        }

        /// The server answered for these: they are no longer in flight, and
        /// those in `done` leave the queue, unless the app queued them
        /// again while they were out (`sent` is what ``markInFlight(_:)``
        /// answered): that newer change still waits.
        func answered(_ changes: [PendingRecordZoneChange], done: [PendingRecordZoneChange], sent: [PendingRecordZoneChange: Int]) {
            let changes = Set(changes.map(canonical)), done = Set(done.map(canonical))
            update(pendingAdded: false) { value in
                value.inFlight.removeAll { changes.contains($0) }
                value.pendingRecordZoneChanges.removeAll { done.contains($0) && sent[$0] == generations[$0, default: 0] }
            }
        }

        public func add(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            let changes = changes.map(canonical)
            update(pendingAdded: !changes.isEmpty) { value in
                value.pendingDatabaseChanges.removeAll { changes.contains($0) }
                value.pendingDatabaseChanges.append(contentsOf: changes)
            }
        }

        public func remove(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            let changes = changes.map(canonical)
            update(pendingAdded: false) { value in value.pendingDatabaseChanges.removeAll { changes.contains($0) } }
        }

        var databaseToken: ServerChangeToken? { lock.withLock { value.databaseToken } }

        func zoneToken(_ zoneID: RecordZone.ID) -> ServerChangeToken? {
            lock.withLock { value.zoneTokens[Self.key(canonical(zoneID))] }
        }

        func setDatabaseToken(_ token: ServerChangeToken?) {
            update(pendingAdded: false) { $0.databaseToken = token }
        }

        /// Every feed position forgotten: the next fetch starts from nothing.
        func forgetTokens() {
            update(pendingAdded: false) { value in
                value.databaseToken = nil
                value.zoneTokens = [:]
                value.zoneRanges = [:]
                value.savedUnfollowed = [:]
            }
        }

        /// The zones followed (a token or a first sync under way): a fetch
        /// of the database from nothing lists only the zones that exist,
        /// so those it lacks are fetched too, to learn they are gone.
        var followedZones: [RecordZone.ID] {
            lock.withLock {
                Set(value.zoneTokens.keys).union(value.zoneRanges.keys).sorted().compactMap { key in
                    value.zoneRanges[key]?.zoneID ?? Self.zoneID(key)
                }
            }
        }

        /// The zones with saves watched until their first full fetch.
        var zonesSavedUnfollowed: [RecordZone.ID] {
            lock.withLock { value.savedUnfollowed.keys.sorted().compactMap(Self.zoneID) }
        }

        /// Saves the server answered: those into a zone not yet followed
        /// are remembered until its first fetch (``savedUnfollowed``). Not
        /// in the public database: its one zone is never deleted, and its
        /// feed leaves out records a role may create but not read, which
        /// would then be reported deleted.
        func saved(_ records: [Record]) {
            guard scope != .public else { return }
            let unfollowed = lock.withLock {
                records.filter { value.zoneTokens[Self.key(canonical($0.recordID.zoneID))] == nil
                    && value.zoneRanges[Self.key(canonical($0.recordID.zoneID))] == nil }
            }
            guard !unfollowed.isEmpty else { return }
            update(pendingAdded: false) { value in
                for record in unfollowed {
                    value.savedUnfollowed[Self.key(canonical(record.recordID.zoneID)), default: [:]][record.recordID.recordName] = record.recordType
                }
            }
        }

        /// A page handed over: its records need no report of their own.
        func delivered(_ names: some Sequence<String>, in zoneID: RecordZone.ID) {
            let key = Self.key(canonical(zoneID))
            guard lock.withLock({ value.savedUnfollowed[key] != nil }) else { return }
            update(pendingAdded: false) { value in
                for name in names { value.savedUnfollowed[key]?[name] = nil }
            }
        }

        /// The records saved before the engine followed the zone that its
        /// first full fetch did not hand over: gone from the server.
        func savedUnfollowed(in zoneID: RecordZone.ID) -> [Database.RecordDeletion] {
            let zone = canonical(zoneID)
            let missing = lock.withLock { value.savedUnfollowed[Self.key(zone)] ?? [:] }
            return missing.sorted { $0.key < $1.key }.map { Database.RecordDeletion(recordID: Record.ID(recordName: $0.key, zoneID: zone), recordType: $0.value) }
        }

        /// Reported (or none left): the zone's saves need no more watching.
        func forgetSavedUnfollowed(in zoneID: RecordZone.ID) {
            let key = Self.key(canonical(zoneID))
            guard lock.withLock({ value.savedUnfollowed[key] != nil }) else { return }
            update(pendingAdded: false) { $0.savedUnfollowed[key] = nil }
        }

        /// Sets a zone's token; nil forgets the zone's position, and any first sync of it under way.
        func setZoneToken(_ token: ServerChangeToken?, for zoneID: RecordZone.ID) {
            let key = Self.key(canonical(zoneID))
            update(pendingAdded: false) { value in
                value.zoneTokens[key] = token
                // Forgotten: the zone is gone, or the app was told to drop its copy.
                if token == nil { value.zoneRanges[key] = nil; value.savedUnfollowed[key] = nil }
            }
        }

        var rangedFetches: [RangedFetch] { lock.withLock { Array(value.zoneRanges.values) } }

        func rangedFetch(_ zoneID: RecordZone.ID) -> RangedFetch? {
            lock.withLock { value.zoneRanges[Self.key(canonical(zoneID))] }
        }

        func setRangedFetch(_ fetch: RangedFetch?, for zoneID: RecordZone.ID) {
            let key = Self.key(canonical(zoneID))
            update(pendingAdded: false) { $0.zoneRanges[key] = fetch }
        }

        /// One range's page was handed over: its next token, nil once read.
        func setRangeToken(_ token: ServerChangeToken?, range: Int, for zoneID: RecordZone.ID) {
            let key = Self.key(canonical(zoneID))
            update(pendingAdded: false) { value in
                guard value.zoneRanges[key]?.ranges.indices.contains(range) == true else { return }
                value.zoneRanges[key]?.ranges[range] = token
            }
        }

        /// Every range read: the zone follows its feed from the position.
        func finishRangedFetch(for zoneID: RecordZone.ID) {
            let key = Self.key(canonical(zoneID))
            update(pendingAdded: false) { value in
                guard let fetch = value.zoneRanges.removeValue(forKey: key) else { return }
                value.zoneTokens[key] = fetch.position
            }
        }

        private func update(pendingAdded: Bool, _ body: (inout Serialization) -> Void) {
            let callback = lock.withLock { () -> (@Sendable (Bool) -> Void)? in
                body(&value)
                return onChange
            }
            callback?(pendingAdded)
        }

        static func key(_ zoneID: RecordZone.ID) -> String { "\(zoneID.ownerName)/\(zoneID.zoneName)" }

        /// The zone a key names (owner names hold no slash; zone names may).
        static func zoneID(_ key: String) -> RecordZone.ID? {
            guard let slash = key.firstIndex(of: "/") else { return nil }
            return RecordZone.ID(zoneName: String(key[key.index(after: slash)...]), ownerName: String(key[..<slash]))
        }
    }
}

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
    /// feed positions it reached and the changes not yet sent. The app adds
    /// pending changes here; the engine sends them and removes what was sent.
    public final class State: @unchecked Sendable {
        /// Everything the app must persist to resume without refetching
        /// (CKSyncEngine.State.Serialization); handed over in `.stateUpdate` events.
        public struct Serialization: Sendable, Codable, Equatable {
            var databaseToken: ServerChangeToken?
            var zoneTokens: [String: ServerChangeToken]
            var pendingRecordZoneChanges: [PendingRecordZoneChange]
            var pendingDatabaseChanges: [PendingDatabaseChange]
        }

        private let lock = NSLock()
        private var value: Serialization
        /// Told after every change, so the engine can emit `.stateUpdate` and schedule a send.
        var onChange: (@Sendable (_ pendingAdded: Bool) -> Void)?

        init(_ serialization: Serialization?) {
            value = serialization ?? Serialization(databaseToken: nil, zoneTokens: [:], pendingRecordZoneChanges: [], pendingDatabaseChanges: [])
        }

        public var pendingRecordZoneChanges: [PendingRecordZoneChange] { lock.withLock { value.pendingRecordZoneChanges } }
        public var pendingDatabaseChanges: [PendingDatabaseChange] { lock.withLock { value.pendingDatabaseChanges } }
        public var serialization: Serialization { lock.withLock { value } }

        /// Queues record saves and deletes; a later change of a record replaces an earlier one.
        public func add(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            update(pendingAdded: !changes.isEmpty) { value in
                for change in changes {
                    value.pendingRecordZoneChanges.removeAll { $0.recordID == change.recordID }
                    value.pendingRecordZoneChanges.append(change)
                }
            }
        }

        public func remove(pendingRecordZoneChanges changes: [PendingRecordZoneChange]) {
            update(pendingAdded: false) { value in value.pendingRecordZoneChanges.removeAll { changes.contains($0) } }
        }

        public func add(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            update(pendingAdded: !changes.isEmpty) { value in
                value.pendingDatabaseChanges.removeAll { changes.contains($0) }
                value.pendingDatabaseChanges.append(contentsOf: changes)
            }
        }

        public func remove(pendingDatabaseChanges changes: [PendingDatabaseChange]) {
            update(pendingAdded: false) { value in value.pendingDatabaseChanges.removeAll { changes.contains($0) } }
        }

        var databaseToken: ServerChangeToken? { lock.withLock { value.databaseToken } }

        func zoneToken(_ zoneID: RecordZone.ID) -> ServerChangeToken? {
            lock.withLock { value.zoneTokens[Self.key(zoneID)] }
        }

        func setDatabaseToken(_ token: ServerChangeToken?) {
            update(pendingAdded: false) { $0.databaseToken = token }
        }

        func setZoneToken(_ token: ServerChangeToken?, for zoneID: RecordZone.ID) {
            update(pendingAdded: false) { $0.zoneTokens[Self.key(zoneID)] = token }
        }

        private func update(pendingAdded: Bool, _ body: (inout Serialization) -> Void) {
            let callback = lock.withLock { () -> (@Sendable (Bool) -> Void)? in
                body(&value)
                return onChange
            }
            callback?(pendingAdded)
        }

        static func key(_ zoneID: RecordZone.ID) -> String { "\(zoneID.ownerName)/\(zoneID.zoneName)" }
    }
}

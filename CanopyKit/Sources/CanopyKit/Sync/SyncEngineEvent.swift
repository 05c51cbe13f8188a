import Foundation

extension SyncEngine {
    /// What the engine tells its delegate (CKSyncEngine.Event).
    public enum Event: Sendable {
        /// Persist this; pass it back in `Configuration.stateSerialization` on the next launch.
        case stateUpdate(State.Serialization)
        /// Zones that changed or went away (deleted, or a share ended or was left).
        case fetchedDatabaseChanges(modifications: [RecordZone.ID], deletions: [RecordZone.ID])
        /// One page of a zone's changes: apply them to the local store.
        case fetchedRecordZoneChanges(zoneID: RecordZone.ID, modifications: [Record], deletions: [Database.RecordDeletion])
        /// The server no longer knows a token (CKError.changeTokenExpired, as
        /// after a restore from backup): forget what you hold of this zone,
        /// or of the whole database when `zoneID` is nil; a full fetch follows.
        /// Canopy's addition: CKSyncEngine recovers without telling the app,
        /// which then cannot learn of records deleted in the gap.
        case changeTokenExpired(zoneID: RecordZone.ID?)
        case sentDatabaseChanges(savedZones: [RecordZone.ID], failedZoneSaves: [RecordZone.ID: CanopyError],
                                 deletedZoneIDs: [RecordZone.ID], failedZoneDeletes: [RecordZone.ID: CanopyError])
        /// The outcome of one batch. A failed save is no longer pending: on
        /// `serverRecordChanged`, merge with `error.serverRecord` and add the save again.
        case sentRecordZoneChanges(savedRecords: [Record], failedRecordSaves: [FailedRecordSave],
                                   deletedRecordIDs: [Record.ID], failedRecordDeletes: [Record.ID: CanopyError])
        /// Canopy's addition: false while the server cannot be reached (the
        /// network, or the server away), true once it answers again. What
        /// waits is kept, and sent by itself when it can be: show "waiting",
        /// not "online".
        case serverReachabilityChanged(reachable: Bool)
        case willFetchChanges
        case didFetchChanges
        case willSendChanges
        case didSendChanges
    }

    /// A save the server refused, with the record the engine sent (CKSyncEngine.Event.SentRecordZoneChanges.FailedRecordSave).
    public struct FailedRecordSave: Sendable {
        public let record: Record
        public let error: CanopyError
    }

    /// What `nextRecordZoneChangeBatch` is asked for (CKSyncEngine.SendChangesContext).
    public struct SendChangesContext: Sendable {
        /// Why the engine is sending.
        public enum Reason: Sendable { case scheduled, manual }
        public let reason: Reason
        /// The most saves and deletes one batch may carry (the server's bound, or less after `limitExceeded`).
        public let maximumBatchSize: Int
        /// Changes to leave out: they were just refused, and are back only when the app adds them again.
        let excluded: Set<PendingRecordZoneChange>
    }

    /// Records to save and IDs to delete in one request (CKSyncEngine.RecordZoneChangeBatch).
    public struct RecordZoneChangeBatch: Sendable {
        public var recordsToSave: [Record]
        public var recordIDsToDelete: [Record.ID]
        /// Send all of a zone's changes in the batch, or none of them.
        public var atomicByZone: Bool
        /// Saves the record provider had no record for: no longer pending.
        var skipped: [PendingRecordZoneChange] = []

        public init(recordsToSave: [Record], recordIDsToDelete: [Record.ID], atomicByZone: Bool = false) {
            self.recordsToSave = recordsToSave
            self.recordIDsToDelete = recordIDsToDelete
            self.atomicByZone = atomicByZone
        }

        /// Builds a batch from pending changes, at most the context's size,
        /// asking `recordProvider` for each record to save (nil: skip it, it is no longer pending).
        public init(pendingChanges: [PendingRecordZoneChange], context: SendChangesContext,
                    recordProvider: (Record.ID) async -> Record?) async {
            var saves: [Record] = []
            var deletes: [Record.ID] = []
            var skipped: [PendingRecordZoneChange] = []
            for change in pendingChanges where !context.excluded.contains(change) {
                guard saves.count + deletes.count < context.maximumBatchSize else { break }
                switch change {
                case .saveRecord(let id):
                    if let record = await recordProvider(id) { saves.append(record) } else { skipped.append(change) }
                case .deleteRecord(let id):
                    deletes.append(id)
                }
            }
            self.init(recordsToSave: saves, recordIDsToDelete: deletes)
            self.skipped = skipped
        }

        var isEmpty: Bool { recordsToSave.isEmpty && recordIDsToDelete.isEmpty }
    }
}

/// The app's side of a sync engine (CKSyncEngineDelegate).
public protocol SyncEngineDelegate: AnyObject, Sendable {
    /// Applies what the engine fetched and learns what it sent; persists `.stateUpdate`.
    func handleEvent(_ event: SyncEngine.Event, syncEngine: SyncEngine) async
    /// The next changes to send, or nil when there are none.
    func nextRecordZoneChangeBatch(_ context: SyncEngine.SendChangesContext, syncEngine: SyncEngine) async -> SyncEngine.RecordZoneChangeBatch?
}

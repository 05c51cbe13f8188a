import Foundation

/// Keeps an app's local copy of one database in step with the server
/// (CKSyncEngine): it fetches database and zone changes from where it left
/// off, sends the app's pending changes in batches within the server's
/// limits, waits out 503s and rate limits as the server asks, hands
/// conflicts to the delegate with the server's record, starts over on an
/// expired token, and (with `automaticallySync`) listens on the gateway's
/// WebSocket to fetch as soon as something changes and sends soon after
/// the app adds changes. docs/CANOPYKIT.md.
public actor SyncEngine {
    /// How to make an engine (CKSyncEngine.Configuration).
    public struct Configuration: Sendable {
        public var database: Database
        /// What the last `.stateUpdate` handed the app; nil on first launch.
        public var stateSerialization: State.Serialization?
        public var delegate: any SyncEngineDelegate
        /// Fetch when the server says something changed, and send soon after changes are added.
        public var automaticallySync: Bool
        /// The most saves and deletes a batch carries (the server allows 400).
        public var maximumBatchSize = 400
        /// How often a failed request is tried again before the error is thrown.
        public var maximumRetries = 12

        public init(database: Database, stateSerialization: State.Serialization?, delegate: any SyncEngineDelegate,
                    automaticallySync: Bool = true) {
            self.database = database
            self.stateSerialization = stateSerialization
            self.delegate = delegate
            self.automaticallySync = automaticallySync
        }
    }

    public nonisolated let database: Database
    public nonisolated let state: State
    /// Held weakly, as CKSyncEngine does: the delegate usually holds the engine.
    private weak var delegate: (any SyncEngineDelegate)?
    private let automaticallySync: Bool
    private let maximumBatchSize: Int
    private let maximumRetries: Int
    private var tail: Task<Void, Never>?
    private var listener: Task<Void, Never>?
    private var scheduledSend: Task<Void, Never>?
    /// Requests tried again after a retryable error, since the engine started (for tests and logs).
    public private(set) var retries = 0

    public init(_ configuration: Configuration) {
        self.database = configuration.database
        self.automaticallySync = configuration.automaticallySync
        self.maximumBatchSize = configuration.maximumBatchSize
        self.maximumRetries = configuration.maximumRetries
        self.delegate = configuration.delegate
        self.state = State(configuration.stateSerialization)
        let engine = UnownedBox(self)
        state.onChange = { pendingAdded in
            Task { await engine.value?.stateChanged(pendingAdded: pendingAdded) }
        }
        if configuration.automaticallySync {
            Task { await engine.value?.startListening() }
        }
    }

    /// Stops listening and sending on its own (an engine otherwise lives as long as its tasks).
    public func stop() {
        listener?.cancel()
        listener = nil
        scheduledSend?.cancel()
        scheduledSend = nil
        state.onChange = nil
    }

    // MARK: Fetching

    /// Fetches every change since the last fetch: zones first, then each
    /// changed zone's records (CKSyncEngine.fetchChanges()).
    public func fetchChanges() async throws {
        try await serially { try await self.fetchAll() }
    }

    private func fetchAll() async throws {
        await emit(.willFetchChanges)
        defer { Task { await self.emit(.didFetchChanges) } }
        var changedZones: [RecordZone.ID] = []
        var more = true
        while more {
            let page: (modifications: [RecordZone.ID], deletions: [RecordZone.ID], changeToken: ServerChangeToken, moreComing: Bool)
            do {
                page = try await retrying { try await self.database.databaseChanges(since: self.state.databaseToken) }
            } catch let error as CanopyError where error.code == .changeTokenExpired {
                await emit(.changeTokenExpired(zoneID: nil))
                state.setDatabaseToken(nil)
                for zone in changedZones { state.setZoneToken(nil, for: zone) }
                changedZones = []
                continue
            }
            if !page.modifications.isEmpty || !page.deletions.isEmpty {
                await emit(.fetchedDatabaseChanges(modifications: page.modifications, deletions: page.deletions))
            }
            for zone in page.deletions { state.setZoneToken(nil, for: zone) }
            changedZones.removeAll { page.deletions.contains($0) }
            for zone in page.modifications where !changedZones.contains(zone) { changedZones.append(zone) }
            state.setDatabaseToken(page.changeToken)
            more = page.moreComing
        }
        for zone in changedZones {
            try await fetchZone(zone)
        }
    }

    private func fetchZone(_ zoneID: RecordZone.ID) async throws {
        var more = true
        while more {
            let page: (modifications: [Record], deletions: [Database.RecordDeletion], changeToken: ServerChangeToken, moreComing: Bool)
            do {
                page = try await retrying { try await self.database.recordZoneChanges(inZoneWith: zoneID, since: self.state.zoneToken(zoneID)) }
            } catch let error as CanopyError where error.code == .changeTokenExpired {
                await emit(.changeTokenExpired(zoneID: zoneID))
                state.setZoneToken(nil, for: zoneID)
                continue
            } catch let error as CanopyError where error.code == .zoneNotFound {
                // Deleted or no longer shared since the database feed said it changed.
                state.setZoneToken(nil, for: zoneID)
                await emit(.fetchedDatabaseChanges(modifications: [], deletions: [zoneID]))
                return
            }
            if !page.modifications.isEmpty || !page.deletions.isEmpty {
                await emit(.fetchedRecordZoneChanges(zoneID: zoneID, modifications: page.modifications, deletions: page.deletions))
            }
            state.setZoneToken(page.changeToken, for: zoneID)
            more = page.moreComing
        }
    }

    // MARK: Sending

    /// Sends pending zone changes, then record changes in batches until none
    /// is left or the delegate has no more (CKSyncEngine.sendChanges()).
    public func sendChanges() async throws {
        try await serially { try await self.sendAll(reason: .manual) }
    }

    private func sendAll(reason: SendChangesContext.Reason) async throws {
        guard !state.pendingDatabaseChanges.isEmpty || !state.pendingRecordZoneChanges.isEmpty else { return }
        await emit(.willSendChanges)
        defer { Task { await self.emit(.didSendChanges) } }
        try await sendDatabaseChanges()
        var batchSize = maximumBatchSize
        var excluded: Set<PendingRecordZoneChange> = []
        while let delegate {
            let context = SendChangesContext(reason: reason, maximumBatchSize: batchSize, excluded: excluded)
            guard let batch = await delegate.nextRecordZoneChangeBatch(context, syncEngine: self), !batch.isEmpty else { return }
            let changes = batch.recordsToSave.map { PendingRecordZoneChange.saveRecord($0.recordID) }
                + batch.recordIDsToDelete.map { PendingRecordZoneChange.deleteRecord($0) }
            if changes.allSatisfy(excluded.contains) { return }  // only what was just refused: stop, not spin
            do {
                try await send(batch, excluded: &excluded)
            } catch let error as CanopyError where error.code == .limitExceeded && batchSize > 1 {
                batchSize = max(1, batchSize / 2)  // too large for one request: split
            }
        }
    }

    private func sendDatabaseChanges() async throws {
        let pending = state.pendingDatabaseChanges
        guard !pending.isEmpty else { return }
        var saved: [RecordZone.ID] = [], deleted: [RecordZone.ID] = []
        var failedSaves: [RecordZone.ID: CanopyError] = [:], failedDeletes: [RecordZone.ID: CanopyError] = [:]
        for change in pending {
            switch change {
            case .saveZone(let zoneID):
                do {
                    _ = try await retrying { try await self.database.save(RecordZone(zoneID: zoneID)) }
                    saved.append(zoneID)
                } catch let error as CanopyError where !error.isRetryable {
                    failedSaves[zoneID] = error
                }
            case .deleteZone(let zoneID):
                do {
                    try await retrying { try await self.database.deleteRecordZone(withID: zoneID) }
                    deleted.append(zoneID)
                } catch let error as CanopyError where error.code == .zoneNotFound {
                    deleted.append(zoneID)
                } catch let error as CanopyError where !error.isRetryable {
                    failedDeletes[zoneID] = error
                }
            }
        }
        state.remove(pendingDatabaseChanges: pending)
        await emit(.sentDatabaseChanges(savedZones: saved, failedZoneSaves: failedSaves, deletedZoneIDs: deleted, failedZoneDeletes: failedDeletes))
    }

    private func send(_ batch: RecordZoneChangeBatch, excluded: inout Set<PendingRecordZoneChange>) async throws {
        let (saveResults, deleteResults) = try await retrying {
            try await self.database.modifyRecords(saving: batch.recordsToSave, deleting: batch.recordIDsToDelete,
                                                  savePolicy: .ifServerRecordUnchanged, atomically: batch.atomicByZone)
        }
        var saved: [Record] = [], failedSaves: [FailedRecordSave] = []
        var deleted: [Record.ID] = [], failedDeletes: [Record.ID: CanopyError] = [:]
        var done: [PendingRecordZoneChange] = []
        for record in batch.recordsToSave {
            switch saveResults[record.recordID] {
            case .success(let savedRecord)?:
                saved.append(savedRecord)
                done.append(.saveRecord(record.recordID))
            case .failure(let error)?:
                failedSaves.append(FailedRecordSave(record: record, error: error))
                // Refused saves leave the queue (the delegate adds them back
                // after merging); those failed only with the batch stay.
                if error.code != .batchRequestFailed { done.append(.saveRecord(record.recordID)) }
                excluded.insert(.saveRecord(record.recordID))
            case nil:
                excluded.insert(.saveRecord(record.recordID))
            }
        }
        for id in batch.recordIDsToDelete {
            switch deleteResults[id] {
            case .success?:
                deleted.append(id)
                done.append(.deleteRecord(id))
            case .failure(let error)? where error.code == .unknownItem:
                deleted.append(id)  // already gone: what the app wanted
                done.append(.deleteRecord(id))
            case .failure(let error)?:
                failedDeletes[id] = error
                if error.code != .batchRequestFailed { done.append(.deleteRecord(id)) }
                excluded.insert(.deleteRecord(id))
            case nil:
                excluded.insert(.deleteRecord(id))
            }
        }
        // Only changes still as they were sent leave the queue: a save the
        // app re-added while this batch was out stays pending.
        state.remove(pendingRecordZoneChanges: done)
        await emit(.sentRecordZoneChanges(savedRecords: saved, failedRecordSaves: failedSaves,
                                          deletedRecordIDs: deleted, failedRecordDeletes: failedDeletes))
    }

    // MARK: Automatic sync

    private func stateChanged(pendingAdded: Bool) async {
        await emit(.stateUpdate(state.serialization))
        guard pendingAdded, automaticallySync, listener != nil else { return }
        scheduledSend?.cancel()
        scheduledSend = Task {
            try? await Task.sleep(for: .milliseconds(100))  // gathers changes added together into one batch
            guard !Task.isCancelled else { return }
            try? await self.serially { try await self.sendAll(reason: .scheduled) }
        }
    }

    /// Listens to `databaseChanged` over the WebSocket; every page is a cue
    /// to fetch. A dropped socket is reopened with back-off, and a fetch
    /// follows, so what changed meanwhile is not missed.
    private func startListening() {
        guard listener == nil else { return }
        listener = Task {
            var failures = 0
            while !Task.isCancelled {
                do {
                    for try await _ in database.databaseChangeNotifications(since: nil) {
                        failures = 0
                        try? await self.fetchChanges()
                        try? await self.serially { try await self.sendAll(reason: .scheduled) }
                    }
                } catch {
                    failures += 1
                }
                guard !Task.isCancelled else { return }
                try? await Task.sleep(for: .milliseconds(min(5000, 250 << min(failures, 5))))
            }
        }
    }

    // MARK: Plumbing

    private func emit(_ event: Event) async {
        await delegate?.handleEvent(event, syncEngine: self)
    }

    /// Runs fetches and sends one at a time, in the order asked.
    private func serially(_ operation: @escaping @Sendable () async throws -> Void) async throws {
        let previous = tail
        let task = Task { () -> Result<Void, any Error> in
            await previous?.value
            return await Result { try await operation() }
        }
        tail = Task { _ = await task.value }
        try await task.value.get()
    }

    /// Tries `operation` again after the server's `Retry-After` (or a
    /// growing pause when it gave none) while the error is retryable.
    private func retrying<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await operation()
            } catch let error as CanopyError where error.isRetryable && attempt < maximumRetries {
                attempt += 1
                retries += 1
                let pause = error.retryAfterSeconds ?? min(5, 0.25 * Double(1 << min(attempt, 5)))
                try await Task.sleep(for: .milliseconds(Int(pause * 1000)))
            }
        }
    }
}

/// Lets the state's callback reach the engine without keeping it alive.
private final class UnownedBox: @unchecked Sendable {
    weak var value: SyncEngine?
    init(_ value: SyncEngine) { self.value = value }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

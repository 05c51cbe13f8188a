import Foundation

/// Keeps an app's local copy of one database in step with the server
/// (CKSyncEngine): it fetches database and zone changes from where it left
/// off, sends the app's pending changes in batches within the server's
/// limits, waits out 503s and rate limits as the server asks, hands
/// conflicts to the delegate with the server's record, starts over on an
/// expired token, and (with `automaticallySync`) listens on the gateway's
/// WebSocket to fetch as soon as something changes and sends soon after
/// the app adds changes. No edit is lost (docs/SYNC_FAULTS.md): every change
/// to what waits is a `.stateUpdate`, the batch in flight is in the state
/// before it leaves, a resend that meets its own earlier write counts as
/// saved, and automatic sync tries again by itself for as long as anything
/// waits, telling the app while the server cannot be reached.
/// docs/CANOPYKIT.md.
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
        /// A zone with no token (a first sync) is read in this many ranges
        /// at once (``Database/recordZoneRanges(inZoneWith:count:)``; at most
        /// 64); 0 or 1 reads it as one chain of pages. Six: what
        /// URLSession.shared opens to one host at once on macOS.
        public var firstSyncRanges = 6
        /// Records a page of a zone's feed (the server allows 400).
        public var pageSize = 200

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
    private let firstSyncRanges: Int
    private let pageSize: Int
    private var tail: Task<Void, Never>?
    private var listener: Task<Void, Never>?
    private var scheduledSend: Task<Void, Never>?
    private var resume: Task<Void, Never>?
    /// Automatic sync's failures in a row, for the pause before it tries again.
    private var failures = 0
    /// State updates, one at a time and in order (``publishState()``).
    private var stateTail: Task<Void, Never>?
    private var stateDirty = false
    /// Requests tried again after a retryable error, since the engine started (for tests and logs).
    public private(set) var retries = 0
    /// Whether the server answered the last request (nil before the
    /// first): false while it cannot be reached, when what waits is sent
    /// once it can. Changes come as `.serverReachabilityChanged`.
    public private(set) var serverReachable: Bool?

    public init(_ configuration: Configuration) {
        self.database = configuration.database
        self.automaticallySync = configuration.automaticallySync
        self.maximumBatchSize = configuration.maximumBatchSize
        self.maximumRetries = configuration.maximumRetries
        self.firstSyncRanges = min(max(configuration.firstSyncRanges, 1), 64)
        self.pageSize = min(max(configuration.pageSize, 1), 400)
        self.delegate = configuration.delegate
        self.state = State(configuration.stateSerialization, scope: configuration.database.databaseScope)
        let engine = UnownedBox(self)
        state.onChange = { pendingAdded in
            Task { await engine.value?.stateChanged(pendingAdded: pendingAdded) }
        }
        if configuration.automaticallySync {
            Task {
                await engine.value?.startListening()
                // Changes queued before a restart go out without waiting for another edit.
                await engine.value?.automaticSync(fetching: false)
            }
        }
    }

    /// A zone as the engine names it in its events and state, however the
    /// app named it (``State/canonical(_:)-swift.method``).
    public nonisolated func canonical(_ zoneID: RecordZone.ID) -> RecordZone.ID {
        state.canonical(zoneID)
    }

    /// A zone as an engine of a database of `scope` names it: in the private
    /// database the caller's own zones are `CurrentUserDefaultName`'s (a zone
    /// spelled with the owner's record name is the same zone), as the
    /// database's answers name them; elsewhere as given.
    public static func canonical(_ zoneID: RecordZone.ID, in scope: Database.Scope) -> RecordZone.ID {
        scope == .private && zoneID.ownerName != CurrentUserDefaultName ? RecordZone.ID(zoneName: zoneID.zoneName) : zoneID
    }

    /// Returns once the delegate has been handed a `.stateUpdate` holding
    /// every change made to the state so far: an app that says "saved"
    /// only after it stored the state waits for this after queuing.
    public func stateStored() async {
        await publishState()
    }

    /// Stops listening and sending on its own (an engine otherwise lives as long as its tasks).
    public func stop() {
        listener?.cancel()
        listener = nil
        scheduledSend?.cancel()
        scheduledSend = nil
        resume?.cancel()
        resume = nil
        state.onChange = nil
    }

    // MARK: Fetching

    /// Fetches every change since the last fetch: zones first, then each
    /// changed zone's records (CKSyncEngine.fetchChanges()).
    public func fetchChanges() async throws {
        try await serially { try await self.fetchAll() }
    }

    /// Fetches only these zones' changes, each from its own token, without
    /// the database feed (CKSyncEngine.FetchChangesOptions' `.zoneIDs` scope):
    /// an app that knows which zone it wants now (the one on screen).
    public func fetchChanges(inZones zoneIDs: [RecordZone.ID]) async throws {
        try await serially {
            await self.emit(.willFetchChanges)
            defer { Task { await self.emit(.didFetchChanges) } }
            for zoneID in zoneIDs { try await self.fetchZone(self.state.canonical(zoneID)) }
        }
    }

    private func fetchAll() async throws {
        await emit(.willFetchChanges)
        defer { Task { await self.emit(.didFetchChanges) } }
        var changedZones: [RecordZone.ID] = []
        var token = state.databaseToken
        // From nothing, the feed lists the zones that exist and no deletion.
        var fromNothing = token == nil
        var more = true
        while more {
            let page: (modifications: [RecordZone.ID], deletions: [RecordZone.ID], changeToken: ServerChangeToken, moreComing: Bool)
            do {
                page = try await retrying { [token] in try await self.database.databaseChanges(since: token) }
            } catch let error as CanopyError where error.code == .changeTokenExpired && token != nil {
                await emit(.changeTokenExpired(zoneID: nil))
                // The delegate forgot the whole database: every zone is
                // fetched from the start again, not only those seen so far
                // (the fault run found a zone followed on from its old token,
                // its earlier records never fetched again).
                state.forgetTokens()
                token = nil
                fromNothing = true
                changedZones = []
                continue
            }
            if !page.modifications.isEmpty || !page.deletions.isEmpty {
                await emit(.fetchedDatabaseChanges(modifications: page.modifications, deletions: page.deletions))
            }
            for zone in page.deletions { state.setZoneToken(nil, for: zone) }
            changedZones.removeAll { page.deletions.contains($0) }
            for zone in page.modifications where !changedZones.contains(zone) { changedZones.append(zone) }
            token = page.changeToken
            more = page.moreComing
        }
        // A first sync an error or a restart interrupted carries on, listed again or not.
        for fetch in state.rangedFetches where !changedZones.contains(fetch.zoneID) { changedZones.append(fetch.zoneID) }
        // A zone followed but not listed from nothing is gone (deleted while
        // the database token was still nil), and so is a zone saved into but
        // never followed that no feed lists: its fetch says so.
        let unlisted = (fromNothing ? state.followedZones : []) + state.zonesSavedUnfollowed
        for zone in unlisted where !changedZones.contains(zone) { changedZones.append(zone) }
        for zone in changedZones {
            try await fetchZone(zone)
        }
        // Only now: a zone fetch that failed is listed again by the next
        // fetch (stored per page before, such a zone waited for its next change).
        state.setDatabaseToken(token)
    }

    private func fetchZone(_ zoneID: RecordZone.ID) async throws {
        if state.zoneToken(zoneID) == nil, firstSyncRanges > 1 || state.rangedFetch(zoneID) != nil {
            guard try await fetchZoneInRanges(zoneID) else { return }
        }
        var more = true
        while more {
            let page: (modifications: [Record], deletions: [Database.RecordDeletion], changeToken: ServerChangeToken, moreComing: Bool)
            do {
                page = try await retrying {
                    try await self.database.recordZoneChanges(inZoneWith: zoneID, since: self.state.zoneToken(zoneID), resultsLimit: self.pageSize)
                }
            } catch let error as CanopyError where error.code == .changeTokenExpired {
                await emit(.changeTokenExpired(zoneID: zoneID))
                state.setZoneToken(nil, for: zoneID)
                continue
            } catch let error as CanopyError where error.code == .zoneNotFound {
                // Deleted or no longer shared since the database feed said it
                // changed. The app hears it before the state forgets the zone:
                // a state stored in between would name the zone nowhere.
                await emit(.fetchedDatabaseChanges(modifications: [], deletions: [zoneID]))
                state.setZoneToken(nil, for: zoneID)
                return
            }
            if !page.modifications.isEmpty || !page.deletions.isEmpty {
                await emit(.fetchedRecordZoneChanges(zoneID: zoneID, modifications: page.modifications, deletions: page.deletions))
                state.delivered(page.modifications.map(\.recordID.recordName) + page.deletions.map(\.recordID.recordName), in: zoneID)
            }
            state.setZoneToken(page.changeToken, for: zoneID)
            more = page.moreComing
        }
        // Saved here before the engine followed the zone, and not in it now:
        // they went with a life of the zone this fetch never saw (deleted
        // and made again under its name before its first fetch).
        let gone = state.savedUnfollowed(in: zoneID)
        if !gone.isEmpty {
            await emit(.fetchedRecordZoneChanges(zoneID: zoneID, modifications: [], deletions: gone))
        }
        state.forgetSavedUnfollowed(in: zoneID)
    }

    /// A first sync in ranges (docs/CHANGE_FEEDS.md, "A first sync in
    /// ranges"): the zone's position and ranges, up to `firstSyncRanges`
    /// read at once (decoding on several cores), each range's next page
    /// asked for before its current one is handed over; pages reach the
    /// delegate one at a time, and a range's token moves only after its page
    /// was handed over, so a stored state resumes only what was not
    /// applied. Then the position is the zone's token. False: the zone is gone.
    private func fetchZoneInRanges(_ zoneID: RecordZone.ID) async throws -> Bool {
        var expired = 0
        while true {
            do {
                let fetch: State.RangedFetch
                if let stored = state.rangedFetch(zoneID) {
                    fetch = stored
                } else {
                    let cut = try await retrying { try await self.database.recordZoneRanges(inZoneWith: zoneID, count: self.firstSyncRanges) }
                    fetch = State.RangedFetch(zoneID: state.canonical(zoneID), position: cut.position, ranges: cut.ranges)
                    state.setRangedFetch(fetch, for: zoneID)
                }
                try await readRanges(of: fetch, zoneID: zoneID)
                state.finishRangedFetch(for: zoneID)
                return true
            } catch let error as CanopyError where error.code == .changeTokenExpired && expired < 3 {
                expired += 1
                await emit(.changeTokenExpired(zoneID: zoneID))
                state.setZoneToken(nil, for: zoneID)   // the app dropped its copy: the ranges and watched saves go
            } catch let error as CanopyError where error.code == .zoneNotFound {
                await emit(.fetchedDatabaseChanges(modifications: [], deletions: [zoneID]))
                state.setZoneToken(nil, for: zoneID)
                return false
            }
        }
    }

    /// Reads a ranged fetch's unfinished ranges, `firstSyncRanges` at once.
    /// After the first error no page reaches the delegate and no range is
    /// started; the requests already out are waited for (each bounded by
    /// its timeout and retries), not cancelled, and the error is thrown.
    /// Not cancelled because on Linux, cancelling URLSession's async
    /// `data(for:)` just as it completes deadlocks in swift-corelibs-foundation
    /// (the task's status lock against the session's queue; the fault run
    /// found it with a task group that cancelled its other ranges).
    private func readRanges(of fetch: State.RangedFetch, zoneID: RecordZone.ID) async throws {
        struct Page: Sendable {
            var range: Int
            var records: [Record]
            var next: ServerChangeToken
            var moreComing: Bool
        }
        var waiting = fetch.ranges.indices.filter { fetch.ranges[$0] != nil }[...]
        let database = database, pageSize = pageSize
        var failure: (any Error)?
        await withTaskGroup(of: Result<Page, any Error>.self) { group in
            func read(_ range: Int, from token: ServerChangeToken) {
                group.addTask {
                    await Result {
                        let page = try await self.retrying {
                            try await database.recordZoneChanges(inZoneWith: zoneID, since: token, resultsLimit: pageSize)
                        }
                        return Page(range: range, records: page.modifications, next: page.changeToken, moreComing: page.moreComing)
                    }
                }
            }
            for _ in 0..<min(firstSyncRanges, waiting.count) {
                let range = waiting.removeFirst()
                read(range, from: fetch.ranges[range]!)
            }
            while let result = await group.next() {
                guard failure == nil else { continue }   // draining what is out
                let page: Page
                switch result {
                case .success(let read): page = read
                case .failure(let error):
                    failure = error
                    continue
                }
                // The next request leaves before this page is handed over.
                if page.moreComing {
                    read(page.range, from: page.next)
                } else if let range = waiting.popFirst() {
                    read(range, from: fetch.ranges[range]!)
                }
                if !page.records.isEmpty {
                    await emit(.fetchedRecordZoneChanges(zoneID: zoneID, modifications: page.records, deletions: []))
                    state.delivered(page.records.map(\.recordID.recordName), in: zoneID)
                }
                state.setRangeToken(page.moreComing ? page.next : nil, range: page.range, for: zoneID)
            }
        }
        if let failure { throw failure }
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
            let next = await delegate.nextRecordZoneChangeBatch(context, syncEngine: self)
            // A save whose record the app no longer has (it went with its
            // zone) leaves the queue, as the record provider's nil says;
            // left there, it would keep the queue from ever emptying.
            if let skipped = next?.skipped, !skipped.isEmpty { state.remove(pendingRecordZoneChanges: skipped) }
            guard let batch = next, !batch.isEmpty else { return }
            let changes = batch.recordsToSave.map { PendingRecordZoneChange.saveRecord(state.canonical($0.recordID)) }
                + batch.recordIDsToDelete.map { PendingRecordZoneChange.deleteRecord(state.canonical($0)) }
            if changes.allSatisfy(excluded.contains) { return }  // only what was just refused: stop, not spin
            do {
                try await send(batch, changes: changes, excluded: &excluded)
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

    /// Sends one batch; `changes` are its saves and deletes as the queue names them.
    private func send(_ batch: RecordZoneChangeBatch, changes: [PendingRecordZoneChange], excluded: inout Set<PendingRecordZoneChange>) async throws {
        // Sent before without an answer (a failed send, a restart mid-send): the server may have them.
        let sentBefore = Set(changes).intersection(state.inFlight)
        // The records as they are now, which the app stores with the state
        // below: every attempt sends these. An app that changes a record
        // object in place while the batch waits to be sent again would
        // otherwise have a retry send the newer fields before it stored
        // them; killed then, it restarts with the older ones, merges them
        // over its own newer write and saves a stale value (seed 131).
        let originals = batch.recordsToSave
        let recordsToSave = originals.map { $0.copy() }
        let generations = state.markInFlight(changes)
        await publishState()  // the batch in flight is in the stored state before it leaves
        let answer: (saveResults: [Record.ID: Result<Record, CanopyError>], deleteResults: [Record.ID: Result<Void, CanopyError>])
        let attempts: Int
        do {
            (answer, attempts) = try await retryingCounted {
                try await self.database.modifyRecords(saving: recordsToSave, deleting: batch.recordIDsToDelete,
                                                      savePolicy: .ifServerRecordUnchanged, atomically: batch.atomicByZone)
            }
        } catch let error as CanopyError where error.code == .zoneNotFound || error.code == .permissionFailure {
            // The whole zone refuses (deleted, unshared, read-only now):
            // every change of the batch fails and leaves the queue.
            state.answered(changes, done: changes, sent: generations)
            for change in changes { excluded.insert(change) }
            await emit(.sentRecordZoneChanges(savedRecords: [], failedRecordSaves: recordsToSave.map { FailedRecordSave(record: $0, error: error) },
                                              deletedRecordIDs: [], failedRecordDeletes: Dictionary(batch.recordIDsToDelete.map { ($0, error) }) { first, _ in first }))
            return
        }
        let (saveResults, deleteResults) = answer
        var saved: [Record] = [], failedSaves: [FailedRecordSave] = []
        var deleted: [Record.ID] = [], failedDeletes: [Record.ID: CanopyError] = [:]
        var done: [PendingRecordZoneChange] = []
        for (record, original) in zip(recordsToSave, originals) {
            switch saveResults[record.recordID] {
            case .success(let savedRecord)?:
                // The app's own object takes the server's tag and dates too, as
                // modifyRecords's records do (its fields stay as they are now).
                original.adoptSystemFields(of: savedRecord)
                saved.append(savedRecord)
                done.append(.saveRecord(record.recordID))
            case .failure(let error)? where error.code == .serverRecordChanged
                && (attempts > 1 || sentBefore.contains(.saveRecord(state.canonical(record.recordID))))
                && error.serverRecord.map({ Self.sameFields(record, $0) }) == true:
                // Sent again after an answer was lost: the "conflict" is with
                // this engine's own earlier write, which the server has.
                record.adoptSystemFields(of: error.serverRecord!)
                original.adoptSystemFields(of: error.serverRecord!)
                saved.append(record)
                done.append(.saveRecord(record.recordID))
            case .failure(let error)?:
                failedSaves.append(FailedRecordSave(record: record, error: error))
                // Refused saves leave the queue (the delegate adds them back
                // after merging); those failed only with the batch stay.
                if error.code != .batchRequestFailed { done.append(.saveRecord(record.recordID)) }
                excluded.insert(.saveRecord(state.canonical(record.recordID)))
            case nil:
                excluded.insert(.saveRecord(state.canonical(record.recordID)))
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
                excluded.insert(.deleteRecord(state.canonical(id)))
            case nil:
                excluded.insert(.deleteRecord(state.canonical(id)))
            }
        }
        // Only changes still as they were sent leave the queue: a save the
        // app re-added while this batch was out stays pending.
        state.saved(saved)
        state.answered(changes, done: done, sent: generations)
        await emit(.sentRecordZoneChanges(savedRecords: saved, failedRecordSaves: failedSaves,
                                          deletedRecordIDs: deleted, failedRecordDeletes: failedDeletes))
    }

    /// Whether the server's record holds exactly the fields `sent` carries.
    static func sameFields(_ sent: Record, _ stored: Record) -> Bool {
        guard let mine = try? sent.input(policy: .allKeys)["fields"], let theirs = try? stored.input(policy: .allKeys)["fields"] else { return false }
        return mine == theirs
    }

    // MARK: Automatic sync

    private func stateChanged(pendingAdded: Bool) async {
        await publishState()
        guard pendingAdded, automaticallySync, listener != nil else { return }
        scheduledSend?.cancel()
        scheduledSend = Task {
            try? await Task.sleep(for: .milliseconds(100))  // gathers changes added together into one batch
            guard !Task.isCancelled else { return }
            await self.automaticSync(fetching: false)
        }
    }

    /// Fetches (when asked) and sends what waits; after a failure, tries
    /// again after ``resumeDelay(failures:random:)``, over and over, for as
    /// long as the server stays away and anything waits.
    func automaticSync(fetching: Bool) async {
        guard automaticallySync, listener != nil else { return }
        do {
            if fetching { try await serially { try await self.fetchAll() } }
            try await serially { try await self.sendAll(reason: .scheduled) }
            failures = 0
        } catch {
            scheduleResume()
        }
    }

    private func scheduleResume() {
        guard automaticallySync, listener != nil, resume == nil else { return }
        let delay = Self.resumeDelay(failures: failures)
        failures += 1
        resume = Task {
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            guard !Task.isCancelled else { return }
            self.resume = nil
            await self.automaticSync(fetching: true)
        }
    }

    /// The pause before automatic sync tries again after `failures`
    /// failures in a row: 1 s doubling to 60 s, half of it random (jitter),
    /// so a crowd of devices does not return at one instant.
    public static func resumeDelay(failures: Int, random: Double = Double.random(in: 0..<1)) -> Double {
        let base = min(pow(2, Double(min(failures, 6))), 60)
        return base / 2 + random * base / 2
    }

    /// Listens to `databaseChanged` over the WebSocket; every page is a cue
    /// to fetch. A dropped socket is reopened with back-off, and a fetch
    /// and a send follow once it is back, so what changed meanwhile is not
    /// missed and what waits goes out.
    private func startListening() {
        guard listener == nil else { return }
        listener = Task {
            var failures = 0
            while !Task.isCancelled {
                do {
                    for try await _ in database.databaseChangeNotifications(since: nil) {
                        failures = 0
                        await self.automaticSync(fetching: true)
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

    /// Hands the delegate the state as it is when its turn comes: one at a
    /// time, in order, so a slow store never writes an older state over a
    /// newer one; returns once the state as it stood at the call is handed over.
    private func publishState() async {
        stateDirty = true
        let previous = stateTail
        let turn = Task {
            await previous?.value
            await self.emitStateIfChanged()
        }
        stateTail = turn
        await turn.value
    }

    private func emitStateIfChanged() async {
        guard stateDirty else { return }
        stateDirty = false
        await emit(.stateUpdate(state.serialization))
    }

    /// Tells the delegate when the server's reachability changes.
    private func setReachable(_ reachable: Bool) async {
        guard serverReachable != reachable else { return }
        serverReachable = reachable
        await emit(.serverReachabilityChanged(reachable: reachable))
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
        try await retryingCounted(operation).value
    }

    /// ``retrying(_:)``, saying how many attempts it took (more than one:
    /// an earlier attempt may have committed without its answer arriving).
    private func retryingCounted<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> (value: T, attempts: Int) {
        var attempt = 0
        while true {
            do {
                let value = try await operation()
                await setReachable(true)
                return (value, attempt + 1)
            } catch let error as CanopyError {
                if error.code == .networkFailure || error.code == .serviceUnavailable {
                    await setReachable(false)
                } else {
                    await setReachable(true)  // the server answered, with a refusal
                }
                guard error.isRetryable && attempt < maximumRetries else { throw error }
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

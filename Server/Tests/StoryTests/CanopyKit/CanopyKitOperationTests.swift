@testable import CanopyGatewayTestSupport
import CanopyKit
import CanopyTestSupport
import Foundation
import Testing

/// Every CanopyKit operation against a live `canopy serve`.
@Suite("CanopyKit operations", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CanopyKitOperationTests {
    @Test("zones and records: typed values round-trip, lookups, conflicts with the server's record, atomic batches, deletes")
    func recordsRoundTrip() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Fasting"))
        #expect(zone.zoneID == RecordZone.ID(zoneName: "Fasting"))
        #expect(try await database.allRecordZones().map(\.zoneID.zoneName).contains("Fasting"))

        let start = Date(timeIntervalSince1970: 1_764_000_000.123)
        let log = Record(recordType: "Log", recordID: Record.ID(recordName: "log", zoneID: zone.zoneID))
        log["title"] = "My fasts"
        try await database.save(log)
        let fast = Record(recordType: "Fast", recordID: Record.ID(recordName: "fast-1", zoneID: zone.zoneID))
        fast["start"] = start
        fast["hours"] = 16
        fast["ratio"] = 0.75
        fast["whole"] = 2.0
        fast["done"] = true
        fast["note"] = "water only"
        fast["blob"] = Data([0, 1, 2, 255])
        fast["where"] = Location(latitude: 52.52, longitude: 13.405)
        // A fix with CloudKit's other six keys (issue 49: once only the first two were kept).
        let fix = Location(latitude: -33.8568, longitude: 151.2153, horizontalAccuracy: 4.5, verticalAccuracy: 3,
                           altitude: 12.25, speed: 1.5, course: 270, timestamp: Date(timeIntervalSince1970: 1_795_707_791.164))
        fast["fix"] = fix
        fast["log"] = Record.Reference(record: log, action: .deleteSelf)
        fast["tags"] = ["a", "b"]
        fast["scores"] = [1, 2, 3]
        // INT64 at both ends (issue 48: the minimum was once refused).
        fast["lowest"] = Int64.min
        fast["highest"] = Int64.max
        fast.setParent(log)
        let saved = try await database.save(fast)
        #expect(saved.recordChangeTag != nil && saved.creationDate != nil)
        #expect(saved.creatorUserRecordName == alice.userRecordName)

        let fetched = try await database.record(for: fast.recordID)
        #expect(fetched["start"] as? Date == start)
        #expect(fetched["hours"] as? Int == 16)
        #expect(fetched["lowest"] as? Int == Int.min && fetched["highest"] as? Int == Int.max,
                "\(String(describing: fetched["lowest"])) \(String(describing: fetched["highest"]))")
        #expect(fetched["ratio"] as? Double == 0.75)
        #expect(fetched["whole"] as? Double == 2.0, "a double stays a double: \(String(describing: fetched["whole"]))")
        #expect(fetched["done"] as? Bool == true)
        #expect(fetched["note"] as? String == "water only")
        #expect(fetched["blob"] as? Data == Data([0, 1, 2, 255]))
        #expect(fetched["where"] as? Location == Location(latitude: 52.52, longitude: 13.405))
        #expect(fetched["fix"] as? Location == fix, "\(String(describing: fetched["fix"]))")
        #expect(fetched["log"] as? Record.Reference == Record.Reference(record: log, action: .deleteSelf))
        #expect(fetched["tags"] as? [String] == ["a", "b"])
        #expect(fetched["scores"] as? [Int] == [1, 2, 3])
        #expect(fetched.parent?.recordID == log.recordID)
        #expect(fetched.recordChangeTag == saved.recordChangeTag)

        // records(for:): one found, one not.
        let missing = Record.ID(recordName: "nope", zoneID: zone.zoneID)
        let both = try await database.records(for: [fast.recordID, missing])
        #expect((try? both[fast.recordID]?.get())?.recordID == fast.recordID)
        #expect(Self.code(both[missing]) == .unknownItem)

        // A stale tag: serverRecordChanged, carrying the server's record.
        let stale = fetched.copy()
        fetched["hours"] = 18
        try await database.save(fetched)
        stale["hours"] = 20
        do {
            try await database.save(stale)
            Issue.record("a stale save was accepted")
        } catch let error as CanopyError {
            #expect(error.code == .serverRecordChanged)
            #expect(error.serverRecord?["hours"] as? Int == 18)
            #expect(error.serverRecord?.recordChangeTag == fetched.recordChangeTag)
        }
        // Saving mine over theirs: take their tag.
        stale.setRecordChangeTag(fetched.recordChangeTag)
        try await database.save(stale)
        #expect(try await database.record(for: fast.recordID)["hours"] as? Int == 20)

        // CHANGED_KEYS writes only what changed, over the server's other keys.
        let partial = Record(recordType: "Fast", recordID: fast.recordID)
        partial["note"] = "tea allowed"
        _ = try await database.modifyRecords(saving: [partial], deleting: [], savePolicy: .changedKeys)
        let merged = try await database.record(for: fast.recordID)
        #expect(merged["note"] as? String == "tea allowed" && merged["hours"] as? Int == 20)

        // Atomic: one bad record fails the batch; the others are batchRequestFailed and not saved.
        let good = Record(recordType: "Fast", recordID: Record.ID(recordName: "fast-2", zoneID: zone.zoneID))
        good["hours"] = 12
        let bad = Record(recordType: "Fast", recordID: Record.ID(recordName: "fast-3", zoneID: zone.zoneID))
        bad["hours"] = "twelve"  // INT64 field: INVALID_ARGUMENTS
        let atomic = try await database.modifyRecords(saving: [good, bad], deleting: [], atomically: true)
        #expect(Self.code(atomic.saveResults[bad.recordID]) == .invalidArguments)
        #expect(Self.code(atomic.saveResults[good.recordID]) == .batchRequestFailed)
        #expect(Self.code(try await database.records(for: [good.recordID])[good.recordID]) == .unknownItem)
        let separate = try await database.modifyRecords(saving: [good, bad], deleting: [], atomically: false)
        #expect((try? separate.saveResults[good.recordID]?.get()) != nil)

        // Deleting the log deletes the fast that references it with DELETE_SELF.
        try await database.deleteRecord(withID: log.recordID)
        #expect(Self.code(try await database.records(for: [fast.recordID])[fast.recordID]) == .unknownItem)
        let gone = try await database.modifyRecords(saving: [], deleting: [log.recordID])
        #expect(Self.code(gone.deleteResults[log.recordID]) == .unknownItem)

        // An unknown zone.
        do {
            _ = try await database.record(for: Record.ID(recordName: "x", zoneID: RecordZone.ID(zoneName: "Nowhere")))
            Issue.record("a record in a missing zone was found")
        } catch let error as CanopyError {
            #expect(error.code == .zoneNotFound || error.code == .unknownItem, "\(error)")
        }
        try await database.deleteRecordZone(withID: zone.zoneID)
        #expect(try await !database.allRecordZones().map(\.zoneID.zoneName).contains("Fasting"))
    }

    @Test("queries: NSPredicate-format filters with arguments, sort, paging by cursor, desired keys")
    func queries() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Fasting")).zoneID
        let base = Date(timeIntervalSince1970: 1_764_000_000)
        let fasts = (0..<25).map { index -> Record in
            let fast = Record(recordType: "Fast", recordID: Record.ID(recordName: String(format: "f%02d", index), zoneID: zone))
            fast["start"] = base.addingTimeInterval(Double(index) * 86_400)
            fast["hours"] = 12 + index % 6
            fast["note"] = index % 2 == 0 ? "even" : "odd"
            return fast
        }
        let (saved, _) = try await database.modifyRecords(saving: fasts, deleting: [])
        #expect(saved.values.allSatisfy { (try? $0.get()) != nil })

        var query = Query(recordType: "Fast", predicate: Predicate(format: "hours >= %@ AND start > %@", 15, base.addingTimeInterval(86_400)))
        query.sortDescriptors = [Query.SortDescriptor(key: "start", ascending: false)]
        var names: [String] = []
        var page = try await database.records(matching: query, inZoneWith: zone, desiredKeys: ["hours"], resultsLimit: 4)
        var pages = 1
        while true {
            for (_, result) in page.matchResults {
                let record = try result.get()
                #expect(record["note"] == nil, "desiredKeys leaves other fields out")
                #expect((record["hours"] as? Int ?? 0) >= 15)
                names.append(record.recordID.recordName)
            }
            guard let cursor = page.queryCursor else { break }
            page = try await database.records(continuingMatchFrom: cursor, desiredKeys: ["hours"], resultsLimit: 4)
            pages += 1
        }
        let expected = fasts.filter { ($0["hours"] as! Int) >= 15 && ($0["start"] as! Date) > base.addingTimeInterval(86_400) }
            .sorted { ($0["start"] as! Date) > ($1["start"] as! Date) }.map(\.recordID.recordName)
        #expect(names == expected)
        #expect(pages == (expected.count + 3) / 4)

        let named = try await database.records(matching: Query(recordType: "Fast", predicate: Predicate(format: "note == $n", substitutionVariables: ["n": "odd"])),
                                               inZoneWith: zone)
        #expect(named.matchResults.count == 12)
        do {
            _ = try await database.records(matching: Query(recordType: "Fast", predicate: Predicate(format: "hours >>> 3")), inZoneWith: zone)
            Issue.record("a bad predicate was accepted")
        } catch let error as CanopyError {
            #expect(error.code == .invalidArguments && error.message.contains("column"), "\(error)")
        }
    }

    @Test("sharing: a share with an invited participant, its metadata, accepting, reading and refused writing as READ_ONLY, leaving")
    func sharing() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let bob = try server.user("bob", email: "bob@example.com")
        let zone = try await alice.container.privateCloudDatabase.save(RecordZone(zoneName: "Fasting")).zoneID
        let fast = Record(recordType: "Fast", recordID: Record.ID(recordName: "f1", zoneID: zone))
        fast["hours"] = 16
        try await alice.container.privateCloudDatabase.save(fast)

        var share = Share(recordZoneID: zone)
        share.title = "Alice's fasts"
        share.addParticipant(Share.Participant(email: "bob@example.com", permission: .readOnly))
        share = try await alice.container.privateCloudDatabase.save(share)
        let url = try #require(share.url)
        #expect(share.participants.contains { $0.email == "bob@example.com" && $0.acceptanceStatus == .pending })
        #expect(try await alice.container.privateCloudDatabase.share(forZoneID: zone)?.url == url)

        let metadata = try await bob.container.shareMetadata(for: url)
        #expect(metadata.title == "Alice's fasts" && metadata.ownerName == alice.userRecordName)
        #expect(metadata.participantStatus == .pending && metadata.participantPermission == .readOnly)
        let accepted = try await bob.container.accept(metadata)
        #expect(accepted.participantStatus == .accepted)

        let shared = bob.container.sharedCloudDatabase
        let zones = try await shared.allRecordZones()
        #expect(zones.map(\.zoneID) == [RecordZone.ID(zoneName: "Fasting", ownerName: alice.userRecordName)])
        let sharedZone = zones[0].zoneID
        let seen = try await shared.record(for: Record.ID(recordName: "f1", zoneID: sharedZone))
        #expect(seen["hours"] as? Int == 16)
        seen["hours"] = 1
        do {
            try await shared.save(seen)
            Issue.record("a READ_ONLY participant saved")
        } catch let error as CanopyError {
            #expect(error.code == .permissionFailure, "\(error)")
        }

        // Alice makes Bob READ_WRITE; his save then lands in her zone.
        var current = try #require(try await alice.container.privateCloudDatabase.share(forZoneID: zone))
        let bobEntry = try #require(current.participants.first { $0.userRecordName == bob.userRecordName })
        var upgraded = bobEntry
        upgraded.permission = .readWrite
        current.addParticipant(upgraded)
        try await alice.container.privateCloudDatabase.save(current)
        let again = try await shared.record(for: seen.recordID)
        again["hours"] = 17
        try await shared.save(again)
        #expect(try await alice.container.privateCloudDatabase.record(for: fast.recordID)["hours"] as? Int == 17)

        // A stranger sees nothing, and cannot read the metadata of a private share.
        let eve = try server.user("eve")
        do {
            _ = try await eve.container.shareMetadata(for: url)
            Issue.record("a stranger read the share's metadata")
        } catch let error as CanopyError {
            #expect(error.code == .permissionFailure)
        }

        // Bob leaves; the zone is gone from his shared database.
        let bobsView = try #require(try await shared.share(forZoneID: sharedZone))
        try await shared.leave(bobsView)
        #expect(try await shared.allRecordZones().isEmpty)

        // Alice removes him for good and stops sharing.
        var last = try #require(try await alice.container.privateCloudDatabase.share(forZoneID: zone))
        if let entry = last.participants.first(where: { $0.userRecordName == bob.userRecordName }) { last.removeParticipant(entry) }
        last = try await alice.container.privateCloudDatabase.save(last)
        #expect(!last.participants.contains { $0.userRecordName == bob.userRecordName && $0.acceptanceStatus != .removed })
        try await alice.container.privateCloudDatabase.deleteShare(last)
        #expect(try await alice.container.privateCloudDatabase.share(forZoneID: zone) == nil)
    }

    @Test("change feeds: database and zone changes since a token; an expired token is changeTokenExpired")
    func changeFeeds() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Fasting")).zoneID
        let first = try await database.databaseChanges(since: nil)
        #expect(first.modifications.contains(zone))
        let (records, _, zoneToken, more) = try await database.recordZoneChanges(inZoneWith: zone, since: nil)
        #expect(records.isEmpty && !more)

        let fast = Record(recordType: "Fast", recordID: Record.ID(recordName: "f1", zoneID: zone))
        fast["hours"] = 16
        let other = Record(recordType: "Fast", recordID: Record.ID(recordName: "f2", zoneID: zone))
        other["hours"] = 12
        _ = try await database.modifyRecords(saving: [fast, other], deleting: [])
        try await database.deleteRecord(withID: other.recordID)
        let since = try await database.recordZoneChanges(inZoneWith: zone, since: zoneToken)
        #expect(since.modifications.map(\.recordID.recordName) == ["f1"])
        #expect(since.deletions.map(\.recordID.recordName) == ["f2"] && since.deletions.first?.recordType == "Fast")
        let dbSince = try await database.databaseChanges(since: first.changeToken)
        #expect(dbSince.modifications == [zone])
        let quiet = try await database.recordZoneChanges(inZoneWith: zone, since: since.changeToken)
        #expect(quiet.modifications.isEmpty && quiet.deletions.isEmpty)

        // As after a restore: the server's token key is retired, and the gateway starts again.
        try server.administer("SELECT canopy.retire_server_secret('change-token')")
        server.stop()
        try await server.startProcess()
        do {
            _ = try await database.recordZoneChanges(inZoneWith: zone, since: since.changeToken)
            Issue.record("a token of a retired key was accepted")
        } catch let error as CanopyError {
            #expect(error.code == .changeTokenExpired, "\(error)")
        }
    }

    @Test("subscriptions: a zone's changes arrive over the WebSocket as an AsyncSequence, with a token that continues over HTTP")
    func subscriptions() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Fasting")).zoneID
        let start = try await database.recordZoneChanges(inZoneWith: zone, since: nil).changeToken
        let pages = database.recordZoneChangeNotifications(inZoneWith: zone, since: start)
        let databasePages = database.databaseChangeNotifications(since: try await database.databaseChanges(since: nil).changeToken)
        let writer = Task {
            try await Task.sleep(for: .milliseconds(300))
            let fast = Record(recordType: "Fast", recordID: Record.ID(recordName: "live", zoneID: zone))
            fast["hours"] = 14
            try await database.save(fast)
        }
        var iterator = pages.makeAsyncIterator()
        let page = try #require(try await iterator.next())
        #expect(page.modifications.map(\.recordID.recordName) == ["live"])
        #expect(page.modifications.first?["hours"] as? Int == 14)
        try await writer.value
        let rest = try await database.recordZoneChanges(inZoneWith: zone, since: page.changeToken)
        #expect(rest.modifications.isEmpty)
        var databaseIterator = databasePages.makeAsyncIterator()
        #expect(try await databaseIterator.next()?.modifications == [zone])

        // A bad token is refused when the socket opens.
        let stranger = Container(baseURL: server.baseURL, token: "cnp_0000000000000000_bad")
        var refused = stranger.privateCloudDatabase.databaseChangeNotifications().makeAsyncIterator()
        do {
            _ = try await refused.next()
            Issue.record("a bad token subscribed")
        } catch let error as CanopyError {
            #expect(error.code == .notAuthenticated || error.code == .networkFailure, "\(error)")
        }
    }

    @Test("assets: a file on a record uploads on save and is a local file again on fetch")
    func assets() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Photos")).zoneID
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("canopykit-\(UUID().uuidString).png")
        let bytes = Data((0..<70_000).map { UInt8($0 % 251) })
        try bytes.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let photo = Record(recordType: "Photo", recordID: Record.ID(recordName: "p1", zoneID: zone))
        photo["image"] = Asset(fileURL: file)
        try await database.save(photo)
        // Saved again unchanged: the asset stays (its token was used up; the stored asset is sent back).
        photo["caption"] = "lunch"
        try await database.save(photo)

        let fetched = try await database.record(for: photo.recordID)
        let asset = try #require(fetched["image"] as? Asset)
        #expect(asset.contentType == "image/png" && asset.size == bytes.count)
        let local = try #require(asset.fileURL)
        #expect(local.path.hasPrefix(alice.container.assetCacheDirectory.path))
        #expect(try Data(contentsOf: local) == bytes)
        #expect(fetched["caption"] as? String == "lunch")
    }

    @Test("storage: storageUsage() counts what is saved; past a quota a save and an upload are quotaExceeded; deleting frees it")
    func storage() async throws {
        let server = try await LiveServer.start()
        let carol = try server.user("carol")
        let database = carol.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Full")).zoneID
        let first = Record(recordType: "Note", recordID: Record.ID(recordName: "a", zoneID: zone))
        first["text"] = String(repeating: "x", count: 500)
        try await database.save(first)
        let before = try await carol.container.storageUsage()
        #expect(before.recordCount == 1 && before.storedBytes > 500 && before.usedBytes == before.storedBytes, "\(before)")
        let set = try CanopyBinary.run(["quotas", "set", "carol", String(before.storedBytes + 100), "--database-url", server.endpoint.url])
        #expect(set.succeeded, "\(set.output)")
        #expect(try await carol.container.storageUsage().quotaBytes == before.storedBytes + 100)
        let second = Record(recordType: "Note", recordID: Record.ID(recordName: "b", zoneID: zone))
        second["text"] = String(repeating: "y", count: 500)
        do {
            try await database.save(second)
            Issue.record("a save past the quota was accepted")
        } catch let error as CanopyError {
            let code = error.partialErrors.values.first?.code ?? error.code
            #expect(code == .quotaExceeded, "\(error)")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("canopykit-\(UUID().uuidString).bin")
        try Data(count: 1000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            _ = try await carol.container.upload(fileURL: file)
            Issue.record("an upload past the quota was accepted")
        } catch let error as CanopyError {
            #expect(error.code == .quotaExceeded, "\(error)")
        }
        try await database.deleteRecord(withID: first.recordID)
        #expect(try await carol.container.storageUsage().usedBytes == 0)
        try await database.save(second)
    }

    @Test("errors: a refused token is notAuthenticated; the provider is asked again after a 401; a stopped server is networkFailure")
    func errors() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let bad = Container(baseURL: server.baseURL, token: "cnp_0000000000000000_bad")
        do {
            _ = try await bad.currentUser()
            Issue.record("a bad token was accepted")
        } catch let error as CanopyError {
            #expect(error.code == .notAuthenticated)
        }
        let asked = Counter()
        let refreshing = Container(baseURL: server.baseURL) { refresh in
            asked.add(refresh ? 10 : 1)
            return refresh ? alice.token : "cnp_0000000000000000_expired"
        }
        #expect(try await refreshing.userRecordID() == alice.userRecordName)
        #expect(asked.value == 11, "asked once, then once with refresh after the 401")
        server.stop()
        do {
            _ = try await alice.container.currentUser()
            Issue.record("a stopped server answered")
        } catch let error as CanopyError {
            #expect(error.code == .networkFailure && error.isRetryable)
        }
    }

    static func code<T>(_ result: Result<T, CanopyError>?) -> CanopyError.Code? {
        guard case .failure(let error)? = result else { return nil }
        return error.code
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add(_ n: Int) { lock.withLock { count += n } }
    var value: Int { lock.withLock { count } }
}

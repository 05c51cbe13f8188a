@testable import CanopyGatewayTestSupport
import CanopyKit
import CanopyTestSupport
import Foundation
import Testing

/// docs/API.md §17 through CanopyKit against a live `canopy serve`: moving
/// records between shared zones while two SyncEngines follow, access
/// requests decided from the owner's database, the activity log, and the
/// root record fetched with share metadata.
@Suite("CanopyKit: sharing additions", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CanopyKitSharingAdditionsTests {
    @Test("a participant moves a hierarchy between two shared zones; the owner's and the participant's SyncEngines converge without knowing about moves")
    func moveWhileSyncing() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let bob = try server.user("bob", email: "bob@example.com")
        var zones: [String: RecordZone.ID] = [:]
        for name in ["Inbox", "Done"] {
            let zone = try await alice.container.privateCloudDatabase.save(RecordZone(zoneName: name)).zoneID
            var share = Share(recordZoneID: zone)
            share.addParticipant(Share.Participant(email: "bob@example.com", permission: .readWrite))
            let url = try #require(try await alice.container.privateCloudDatabase.save(share).url)
            try await bob.container.accept(url: url)
            zones[name] = zone
        }
        let inbox = try #require(zones["Inbox"]), done = try #require(zones["Done"])
        let aliceStore = LocalStore(), bobStore = LocalStore()
        let aliceEngine = SyncEngine(.init(database: alice.container.privateCloudDatabase, stateSerialization: nil, delegate: aliceStore, automaticallySync: false))
        let bobEngine = SyncEngine(.init(database: bob.container.sharedCloudDatabase, stateSerialization: nil, delegate: bobStore, automaticallySync: false))
        await aliceStore.edit(Record.ID(recordName: "list", zoneID: inbox), type: "List", in: aliceEngine, ["title": "Trip"])
        await aliceStore.edit(Record.ID(recordName: "stay", zoneID: inbox), type: "List", in: aliceEngine, ["title": "Stays"])
        try await aliceEngine.sendChanges()
        let db = alice.container.privateCloudDatabase
        let item = Record(recordType: "Item", recordID: Record.ID(recordName: "item", zoneID: inbox))
        item["title"] = "Passport"
        item.parent = Record.Reference(recordID: Record.ID(recordName: "list", zoneID: inbox), action: .none)
        _ = try await db.save(item)
        let photo = FileManager.default.temporaryDirectory.appendingPathComponent("canopykit-move-\(UUID().uuidString).txt")
        try Data("passport scan".utf8).write(to: photo)
        defer { try? FileManager.default.removeItem(at: photo) }
        let scan = Record(recordType: "Item", recordID: Record.ID(recordName: "scan", zoneID: inbox))
        scan["file"] = Asset(fileURL: photo, contentType: "text/plain")
        scan.parent = Record.Reference(recordID: item.recordID, action: .none)
        _ = try await db.save(scan)
        try await aliceEngine.fetchChanges()
        try await bobEngine.fetchChanges()
        #expect(await bobStore.records.count == 4)

        let bobInbox = RecordZone.ID(zoneName: "Inbox", ownerName: alice.userRecordName)
        let bobDone = RecordZone.ID(zoneName: "Done", ownerName: alice.userRecordName)
        let result = try await bob.container.sharedCloudDatabase.move([Record.ID(recordName: "list", zoneID: bobInbox)], to: bobDone)
        #expect(result.moved == ["item", "list", "scan"] && result.errors.isEmpty, "\(result)")

        try await aliceEngine.fetchChanges()
        try await bobEngine.fetchChanges()
        for (store, zone) in [(aliceStore, done), (bobStore, bobDone)] {
            let records = await store.records
            #expect(Set(records.keys.filter { $0.zoneID == zone }.map(\.recordName)) == ["list", "item", "scan"], "\(records.keys)")
            #expect(records.keys.filter { ["list", "item", "scan"].contains($0.recordName) }.count == 3, "in one zone only: \(records.keys)")
            #expect(records[Record.ID(recordName: "item", zoneID: zone)]?.parent?.recordID.recordName == "list")
            #expect(records[Record.ID(recordName: "scan", zoneID: zone)]?.parent?.recordID.recordName == "item")
        }
        #expect(await aliceStore.records[Record.ID(recordName: "stay", zoneID: inbox)] != nil)
        // The asset came along: fetched in its new zone, its bytes are the same.
        let moved = try await bob.container.sharedCloudDatabase.record(for: Record.ID(recordName: "scan", zoneID: bobDone))
        let file = try #require((moved["file"] as? Asset)?.fileURL)
        #expect(try Data(contentsOf: file) == Data("passport scan".utf8))

        // Moving it back onto a name the target has is refused, nothing moved.
        _ = try await db.save(Record(recordType: "List", recordID: Record.ID(recordName: "stay", zoneID: done)))
        let clash = try await db.move([Record.ID(recordName: "stay", zoneID: inbox)], to: done)
        #expect(clash.moved.isEmpty && clash.errors["stay"]?.code == .serverRecordChanged, "\(clash)")
    }

    @Test("access requests and the activity log from CanopyKit; metadata with the root record's asked keys")
    func requestsActivityAndPreview() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let bob = try server.user("bob", email: "bob@example.com")
        let db = alice.container.privateCloudDatabase
        let zone = try await db.save(RecordZone(zoneName: "Lists")).zoneID
        let root = Record(recordType: "List", recordID: Record.ID(recordName: "groceries", zoneID: zone))
        root["title"] = "Groceries"
        root["notes"] = "private notes"
        _ = try await db.save(root)
        var share = Share(rootRecord: root)
        share.allowsAccessRequests = true
        share.type = "com.example.list"
        share = try await db.save(share)
        let url = try #require(share.url)
        #expect(share.allowsAccessRequests && share.type == "com.example.list")

        let before = try await bob.container.shareMetadata(for: url, shouldFetchRootRecord: true, rootRecordDesiredKeys: ["title"])
        #expect(before.allowsAccessRequests && before.participantPermission == .none && before.rootRecord == nil, "a requester sees no root")
        let asked = try await bob.container.requestAccess(url: url)
        #expect(asked.accessRequestStatus == "PENDING")
        let pending = try #require(try await db.share(forRootRecordID: root.recordID))
        #expect(pending.accessRequests.map(\.user?.userRecordName) == [bob.userRecordName])
        #expect(pending.accessRequests.first?.user?.email == "bob@example.com")
        let approved = try await db.approveAccessRequest(from: bob.userRecordName, on: pending, permission: .readOnly)
        let bobParticipant = try #require(approved.participant(userRecordName: bob.userRecordName))
        #expect(bobParticipant.isApprovedRequester && bobParticipant.acceptanceStatus == .accepted && bobParticipant.dateAddedToShare != nil)

        let after = try await bob.container.shareMetadata(for: url, shouldFetchRootRecord: true, rootRecordDesiredKeys: ["title"])
        #expect(after.rootRecord?["title"] as? String == "Groceries" && after.rootRecord?["notes"] == nil, "only the asked keys")

        var entries: [Share.Activity] = []
        var cursor: String?
        repeat {
            let page = try await db.activity(of: approved, after: cursor, limit: 2)
            entries += page.entries
            cursor = page.cursor
        } while cursor != nil
        #expect(entries.map(\.event) == ["SHARE_CREATED", "REQUEST_MADE", "REQUEST_APPROVED"], "\(entries)")
        #expect(entries.last?.actor == alice.userRecordName && entries.last?.subject == bob.userRecordName)
    }
}

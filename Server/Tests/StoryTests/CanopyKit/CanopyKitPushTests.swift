@testable import CanopyGatewayTestSupport
import CanopyKit
import CanopyTestSupport
import Foundation
import Testing

/// CanopyKit's push API (issue 23) against a live `canopy serve`: the
/// subscriptions it keeps, the devices it registers, the `Canopy-Device`
/// header it sends, and the notifications it reads.
@Suite("CanopyKit push", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct CanopyKitPushTests {
    @Test("subscriptions of each kind are saved, listed in their own database and read back; a bad predicate and a missing ID are clear errors")
    func subscriptions() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let database = alice.container.privateCloudDatabase
        let zone = try await database.save(RecordZone(zoneName: "Fasting"))
        let seed = Record(recordType: "Fast", recordID: Record.ID(recordName: "seed", zoneID: zone.zoneID))
        seed["hours"] = 12
        try await database.save(seed)

        try await database.save(Subscription.database(subscriptionID: "everything"))
        try await database.save(Subscription.recordZone(zone.zoneID, subscriptionID: "fasting"))
        let long = try await database.save(Subscription.query(
            recordType: "Fast", predicate: Predicate(format: "hours >= %@", 20), zoneID: zone.zoneID,
            subscriptionID: "long-fasts", options: [.firesOnRecordCreation]))
        guard case .query(let recordType, let predicate, let zoneID, let options) = long.kind else {
            Issue.record("saved as \(long.kind)")
            return
        }
        #expect(recordType == "Fast" && predicate.format == "hours >= %@" && zoneID == zone.zoneID && options == [.firesOnRecordCreation])

        let all = try await database.allSubscriptions()
        #expect(Set(all.map(\.subscriptionID)) == ["everything", "fasting", "long-fasts"])
        if case .recordZone(let watched) = try await database.subscription(for: "fasting").kind {
            #expect(watched == zone.zoneID)
        } else {
            Issue.record("the zone subscription came back as another kind")
        }
        #expect(try await alice.container.sharedCloudDatabase.allSubscriptions().isEmpty, "the shared database listed the private one's")

        // Saving the same ID replaces it.
        try await database.save(Subscription.query(recordType: "Fast", subscriptionID: "long-fasts", options: .all))
        if case .query(_, let predicate, let zoneID, let options) = try await database.subscription(for: "long-fasts").kind {
            #expect(predicate.format == "TRUEPREDICATE" && zoneID == nil && options == .all)
        } else {
            Issue.record("the replaced subscription came back as another kind")
        }

        let bad = await #expect(throws: CanopyError.self) {
            try await database.save(Subscription.query(recordType: "Fast", predicate: Predicate(format: "hours >>= %@", 3), subscriptionID: "bad"))
        }
        #expect(bad?.code == .invalidArguments, "\(String(describing: bad))")
        let none = await #expect(throws: CanopyError.self) {
            try await database.save(Subscription.query(recordType: "Fast", subscriptionID: "never", options: []))
        }
        #expect(none?.code == .invalidArguments && none?.message.contains("at least one") == true, "\(String(describing: none))")

        try await database.deleteSubscription(withID: "fasting")
        #expect(try await database.allSubscriptions().count == 2)
        let missing = await #expect(throws: CanopyError.self) { try await database.deleteSubscription(withID: "fasting") }
        #expect(missing?.code == .unknownItem, "\(String(describing: missing))")
        let unknown = await #expect(throws: CanopyError.self) { _ = try await database.subscription(for: "fasting") }
        #expect(unknown?.code == .unknownItem)
    }

    @Test("a device registered through CanopyKit is told of another device's change and not of its own; the notification reads back")
    func devicesAndNotifications() async throws {
        let server = try await LiveServer.start()
        let alice = try server.user("alice")
        let receiver = try await WebhookReceiver()
        let phone = Container(baseURL: server.baseURL, token: alice.token)
        let laptop = Container(baseURL: server.baseURL, token: alice.token)

        let phoneDevice = try await phone.register(.webhook(url: URL(string: receiver.url("phone"))!))
        #expect(phoneDevice.kind == .webhook && (phoneDevice.signingSecret?.count ?? 0) >= 43)
        #expect(phone.deviceID == nil, "a webhook became the container's own device")
        phone.deviceID = phoneDevice.deviceID
        try await laptop.register(.webhook(url: URL(string: receiver.url("laptop"))!))
        try await phone.privateCloudDatabase.save(Subscription.database(subscriptionID: "everything"))

        let note = Record(recordType: "Note", recordID: Record.ID(recordName: "from-phone", zoneID: .default))
        note["text"] = "hello"
        try await phone.privateCloudDatabase.save(note)
        #expect(await eventually { await receiver.log.count(path: "/hook/laptop") >= 1 }, "the laptop was not told")
        try await Task.sleep(for: .seconds(1.5))
        #expect(await receiver.log.count(path: "/hook/phone") == 0, "the phone was told of its own change")

        let push = try #require(await receiver.log.received.first { $0.path == "/hook/laptop" })
        let notification = try #require(PushNotification(json: Data(push.body.utf8)), "\(push.body)")
        #expect(notification.subscriptionIDs == ["everything"])
        #expect(notification.notificationID == push.headers["canopy-notification"])
        // APNs's and Web Push's shape; anything else is not Canopy's.
        let apns = PushNotification(remoteNotification: ["aps": ["content-available": 1], "canopy": ["sid": ["everything"], "nid": "n1"]])
        #expect(apns?.subscriptionIDs == ["everything"] && apns?.notificationID == "n1")
        #expect(PushNotification(remoteNotification: ["aps": ["alert": "hi"]]) == nil)

        // An APNs token is this container's device once registered.
        let token = Data((0..<32).map { UInt8($0) })
        let tablet = Container(baseURL: server.baseURL, token: alice.token)
        let apnsDevice = try await tablet.register(.apns(token: token, environment: .sandbox, topic: "com.example.fasting"))
        #expect(apnsDevice.kind == .apns && tablet.deviceID == apnsDevice.deviceID)
        #expect(try await tablet.register(.apns(token: token, environment: .sandbox, topic: "com.example.fasting")).deviceID == apnsDevice.deviceID,
                "registering the same token again made another device")
        #expect(try await phone.devices().count == 3)
        #expect(try await tablet.unregisterDevice(withID: apnsDevice.deviceID))
        #expect(tablet.deviceID == nil)
        #expect(try await tablet.unregisterDevice(withID: apnsDevice.deviceID) == false)

        let key = try await phone.vapidPublicKey()
        #expect(key.count == 87, "a P-256 public key is 65 bytes, 87 base64url characters: \(key)")
    }
}

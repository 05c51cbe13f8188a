@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyEncoding
import CanopyGateway
import CanopyPush
import CanopyRequestStore
import CanopyTestSupport
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

/// Push (issue 23, docs/API.md §14, docs/PUSH.md) end to end: subscriptions and
/// devices saved through GraphQL, a commit, and the notification arriving
/// at a real receiver: a webhook server, a Web Push endpoint that decrypts
/// (Python), an HTTP/2 server in APNs's shape. Nothing is mocked; the
/// deliverer runs as the gateway's service, as in `canopy serve`.
@Suite("Push: subscriptions that outlive a connection", .serialized)
struct PushTests {
    // MARK: GraphQL

    @Test("subscriptions and devices are saved, listed and deleted, each user seeing only their own; bad input says what and where")
    func manageSubscriptions() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            let saved = try await client.call("saveSubscription", """
                mutation { saveSubscription(subscriptionID: "all", kind: DATABASE) { subscriptionID kind scope zone { zoneName } firesOn } }
                """, token: alice)
            #expect(saved.object["subscriptionID"] as? String == "all", "\(saved.body)")
            #expect(saved.object["scope"] as? String == "PRIVATE")
            let zone = try await client.call("saveSubscription", """
                mutation { saveSubscription(subscriptionID: "zone", kind: ZONE, zone: {zoneName: "_defaultZone"}) { zone { zoneName ownerName } } }
                """, token: alice)
            #expect((zone.object["zone"] as? [String: Any])?["zoneName"] as? String == "_defaultZone", "\(zone.body)")
            let missing = try await client.call("saveSubscription", """
                mutation { saveSubscription(subscriptionID: "z2", kind: ZONE, zone: {zoneName: "NoSuchZone"}) { subscriptionID } }
                """, token: alice)
            #expect(missing.code == "ZONE_NOT_FOUND", "\(missing.body)")
            let badFilter = try await client.call("saveSubscription", """
                mutation { saveSubscription(subscriptionID: "q", kind: QUERY, recordType: "Note", filter: "priority >") { subscriptionID } }
                """, token: alice)
            #expect(badFilter.code == "INVALID_ARGUMENTS" || badFilter.code == "BAD_REQUEST", "\(badFilter.body)")
            #expect(((firstError(badFilter.body)["locations"] as? [[String: Any]]) ?? []).isEmpty == false, "no location: \(badFilter.body)")
            let zoneOnDatabase = try await client.call("saveSubscription", """
                mutation { saveSubscription(subscriptionID: "d", kind: DATABASE, zone: {zoneName: "_defaultZone"}) { subscriptionID } }
                """, token: alice)
            #expect(zoneOnDatabase.code == "INVALID_ARGUMENTS" && zoneOnDatabase.message.contains("zone"), "\(zoneOnDatabase.body)")

            let hook = try await client.call("registerDevice", """
                mutation { registerDevice(kind: WEBHOOK, url: "https://hooks.example.com/canopy") { deviceID kind url signingSecret } }
                """, token: alice)
            let secret = try #require(hook.object["signingSecret"] as? String, "\(hook.body)")
            #expect(secret.count >= 43)
            let plainHTTP = try await client.call("registerDevice", """
                mutation { registerDevice(kind: WEBHOOK, url: "http://hooks.example.com/canopy") { deviceID } }
                """, token: alice)
            #expect(plainHTTP.code == "INVALID_ARGUMENTS" && plainHTTP.message.contains("https"), "\(plainHTTP.body)")
            let badToken = try await client.call("registerDevice", """
                mutation { registerDevice(kind: APNS, apnsToken: "xyz", apnsTopic: "com.example.app") { deviceID } }
                """, token: alice)
            #expect(badToken.code == "INVALID_ARGUMENTS" && badToken.message.contains("apnsToken"), "\(badToken.body)")

            let listed = try await client.call("devices", "{ devices { deviceID kind url signingSecret } }", token: alice)
            #expect(listed.list.count == 1)
            #expect(listed.list.first?["signingSecret"] is NSNull, "a listing shows no secret: \(listed.body)")
            let theirs = try await client.call("devices", "{ devices { deviceID } }", token: bob)
            #expect(theirs.list.isEmpty)
            let bobsSubscriptions = try await client.call("subscriptions", "{ subscriptions { subscriptionID } }", token: bob)
            #expect(bobsSubscriptions.list.isEmpty)
            let deviceID = try #require(hook.object["deviceID"] as? String)
            let strangerRemoves = try await client.call("unregisterDevice", "mutation { unregisterDevice(deviceID: \"\(deviceID)\") }", token: bob)
            #expect(strangerRemoves.data as? Bool == false)
            let removes = try await client.call("unregisterDevice", "mutation { unregisterDevice(deviceID: \"\(deviceID)\") }", token: alice)
            #expect(removes.data as? Bool == true)

            let mine = try await client.call("subscriptions", "{ subscriptions { subscriptionID kind } }", token: alice)
            #expect(mine.list.compactMap { $0["subscriptionID"] as? String } == ["all", "zone"])
            let deleted = try await client.call("deleteSubscription", "mutation { deleteSubscription(subscriptionID: \"all\") }", token: alice)
            #expect(deleted.data as? Bool == true)
            let again = try await client.call("deleteSubscription", "mutation { deleteSubscription(subscriptionID: \"all\") }", token: alice)
            #expect(again.code == "UNKNOWN_ITEM", "\(again.body)")
            let configuration = try await client.call("pushConfiguration", "{ pushConfiguration { vapidPublicKey } }", token: alice)
            let key = try #require(configuration.object["vapidPublicKey"] as? String)
            #expect(Base64URL.decode(key)?.count == 65)
        }
    }

    // MARK: Webhooks

    @Test("a webhook gets a signed notice that says only which subscription fired, for a commit in a subscribed zone")
    func webhookDelivery() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken
            let secret = try await PushFixture.registerWebhook(client, url: receiver.url("alice"), token: alice)
            try await PushFixture.subscribe(client, "fasts", kind: "DATABASE", token: alice)
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Divorce-Papers\") { zoneName } }", token: alice)
            _ = try await save(client, token: alice, zone: "Divorce-Papers", [fast("secret-record", hours: 16, end: 1_700_000_000_000)])
            #expect(await eventually { await receiver.log.count() >= 1 }, "no webhook arrived")
            let push = try #require(await receiver.log.received.first)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(push.body.utf8)) as? [String: Any])
            #expect(body["subscriptionIDs"] as? [String] == ["fasts"], "\(push.body)")
            #expect(body["userRecordName"] as? String == harness.alice.userRecordName)
            // Nothing private: no zone or record name, no field.
            for word in ["Divorce", "secret-record", "fast secret", "hours"] {
                #expect(!push.body.contains(word), "the notice carries \(word): \(push.body)")
            }
            // The signature checks with the secret the owner was shown.
            let signature = try #require(push.headers["canopy-signature"])
            let parts = Dictionary(uniqueKeysWithValues: signature.split(separator: ",").map { pair -> (String, String) in
                let kv = pair.split(separator: "=", maxSplits: 1)
                return (String(kv[0]), String(kv[1]))
            })
            let time = try #require(parts["t"])
            let mac = HMAC<SHA256>.authenticationCode(for: Data("\(time).\(push.body)".utf8), using: SymmetricKey(data: try #require(Base64URL.decode(secret))))
            #expect(parts["v1"] == Hex.encode(mac), "signature does not check: \(signature)")
            #expect(abs(Double(time)! - Date().timeIntervalSince1970) < 60)
            #expect(push.headers["canopy-notification"] == body["notificationID"] as? String)
        }
    }

    @Test("a webhook answering 500 is retried, and the notice arrives once accepted; nothing stays queued")
    func webhookRetry() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        await receiver.log.fail(with: 500, times: 2)
        try await harness.test(configuration: PushFixture.configuration()) { client, database in
            let alice = harness.aliceToken
            _ = try await PushFixture.registerWebhook(client, url: receiver.url("alice"), token: alice)
            try await PushFixture.subscribe(client, "all", kind: "DATABASE", token: alice)
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("a", hours: 12, end: 1_700_000_000_000)])
            #expect(await eventually { await receiver.log.received.contains { $0.status == 204 } }, "never delivered")
            #expect(await PushFixture.drained(harness), "something stayed queued")
            let statuses = await receiver.log.received.map(\.status)
            #expect(statuses == [500, 500, 204], "\(statuses)")
            let ids = Set(await receiver.log.received.map { $0.headers["canopy-notification"] ?? "" })
            #expect(ids.count == 1, "a retry is the same notification: \(ids)")
        }
    }

    @Test("200 commits in a burst make a handful of webhook calls (at most one a second), not 200")
    func burstIsCoalesced() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken
            _ = try await PushFixture.registerWebhook(client, url: receiver.url("alice"), token: alice)
            try await PushFixture.subscribe(client, "all", kind: "DATABASE", token: alice)
            let start = ContinuousClock.now
            for index in 0..<200 {
                _ = try await save(client, token: alice, zone: "_defaultZone", [fast("r\(index)", hours: 1, end: 1_700_000_000_000)])
            }
            let seconds = (ContinuousClock.now - start).inSeconds
            #expect(await PushFixture.drained(harness) { await receiver.log.count() > 0 })
            let calls = await receiver.log.count()
            // At most one a second a device from the first commit until now
            // (a bound however slow the machine), where each commit alone
            // would have made 200.
            let elapsed = (ContinuousClock.now - start).inSeconds
            print("push burst: 200 commits in \(String(format: "%.1f", seconds)) s made \(calls) webhook calls")
            #expect(calls >= 1 && Double(calls) <= elapsed + 1, "\(calls) calls for 200 commits in \(elapsed) s")
        }
    }

    @Test("the device that made a change is not told of it; the user's other device is")
    func originDeviceSkipped() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken
            let phone = try await client.call("registerDevice", "mutation { registerDevice(kind: WEBHOOK, url: \"\(receiver.url("phone"))\") { deviceID } }", token: alice)
            _ = try await PushFixture.registerWebhook(client, url: receiver.url("laptop"), token: alice)
            try await PushFixture.subscribe(client, "all", kind: "DATABASE", token: alice)
            let phoneID = try #require(phone.object["deviceID"] as? String)
            let body = try JSONSerialization.data(withJSONObject: [
                "query": "mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, save: $s) { saved { recordName } } }",
                "variables": ["s": [fast("from-phone", hours: 3, end: 1_700_000_000_000)]],
            ])
            let response = try await client.execute(uri: "/graphql", method: .post, headers: [
                .contentType: "application/json", .authorization: "Bearer \(alice)", HTTPField.Name("Canopy-Device")!: phoneID,
            ], body: ByteBuffer(bytes: body))
            #expect(response.status == .ok)
            #expect(await eventually { await receiver.log.count(path: "/hook/laptop") >= 1 }, "the other device was not told")
            #expect(await PushFixture.drained(harness))
            #expect(await receiver.log.count(path: "/hook/phone") == 0, "the device that made the change was told of it")
        }
    }

    @Test("a QUERY subscription fires for a matching record of its type, not for others; firesOn is honoured")
    func querySubscription() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken
            _ = try await PushFixture.registerWebhook(client, url: receiver.url("alice"), token: alice)
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("seed", hours: 1, end: 1_700_000_000_000)])
            let saved = try await client.call("saveSubscription", """
                mutation { saveSubscription(subscriptionID: "long-fasts", kind: QUERY, recordType: "Fast", filter: "hours >= $h", args: {h: 20}, firesOn: [CREATE]) { subscriptionID firesOn } }
                """, token: alice)
            #expect(saved.object["firesOn"] as? [String] == ["CREATE"], "\(saved.body)")
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("short", hours: 2, end: 1_700_000_000_000)])
            #expect(await PushFixture.drained(harness))
            #expect(await receiver.log.count() == 0, "a record the filter excludes fired the subscription")
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("long", hours: 24, end: 1_700_000_000_000)])
            #expect(await eventually { await receiver.log.count() == 1 }, "a matching new record did not fire")
            let body = await receiver.log.received.first?.body ?? ""
            #expect(body.contains("long-fasts"))
        }
    }

    @Test("a QUERY subscription in the public database fires for another user's record the grants let the subscriber read, never for one they may not read; DATABASE and ZONE there are BAD_DATABASE")
    func publicQuerySubscription() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        let schema = try schemaCommand(["apply"], file: """
            DEFINE SCHEMA
                RECORD TYPE Post (title STRING QUERYABLE);
                RECORD TYPE Diary (title STRING, GRANT READ, WRITE TO "_creator", GRANT CREATE TO "_icloud");
            """, on: harness.endpoint)
        #expect(schema.succeeded, "\(schema.output)")
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let (alice, bob) = (harness.aliceToken, harness.bobToken)
            _ = try await PushFixture.registerWebhook(client, url: receiver.url("bob"), token: bob)
            for (id, type, filter) in [("posts", "Post", "title BEGINSWITH 'News'"), ("diaries", "Diary", nil)] as [(String, String, String?)] {
                let saved = try await client.call("saveSubscription", """
                    mutation($f: String) { saveSubscription(subscriptionID: "\(id)", kind: QUERY, scope: PUBLIC, recordType: "\(type)", filter: $f) {
                      subscriptionID scope zone { zoneName ownerName } } }
                    """, ["f": filter ?? NSNull()], token: bob)
                #expect(saved.object["scope"] as? String == "PUBLIC", "\(saved.body)")
                #expect((saved.object["zone"] as? [String: Any])?["ownerName"] as? String == "__defaultOwner__", "\(saved.body)")
            }
            let publish: (String, String, String) async throws -> Void = { name, type, title in
                let answer = try await client.call("modifyRecords", """
                    mutation($s: [RecordInput!]) { modifyRecords(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, save: $s) { errors { code message } } }
                    """, ["s": [["recordName": name, "recordType": type, "fields": ["title": title]]]], token: alice)
                #expect((answer.object["errors"] as? [Any])?.isEmpty == true, "\(answer.body)")
            }
            // alice's diary: only alice may read it, so bob's subscription on Diary never fires.
            try await publish("d1", "Diary", "dear diary")
            try await publish("p0", "Post", "Old news")
            #expect(await PushFixture.drained(harness))
            #expect(await receiver.log.count() == 0, "bob was told of a record he may not read, or of one the filter excludes")
            try await publish("p1", "Post", "News of the day")
            #expect(await eventually { await receiver.log.count() == 1 }, "a matching public record did not fire bob's subscription")
            let body = await receiver.log.received.first?.body ?? ""
            #expect(body.contains("posts") && !body.contains("diaries"), "\(body)")
            for kind in ["DATABASE", "ZONE"] {
                let refused = try await client.call("saveSubscription", """
                    mutation { saveSubscription(subscriptionID: "x", kind: \(kind), scope: PUBLIC\(kind == "ZONE" ? ", zone: {zoneName: \"_defaultZone\"}" : "")) { subscriptionID } }
                    """, token: bob)
                #expect(refused.code == "BAD_DATABASE", "\(kind): \(refused.body)")
            }
        }
    }

    @Test("a participant removed from a share is told once (they must fetch to learn it) and never again")
    func removedParticipantStops() async throws {
        let harness = try await GatewayHarness.make()
        let receiver = try await WebhookReceiver()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken, bob = harness.bobToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Family\") { zoneName } }", token: alice)
            let share = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Family", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}]) { url } }
                """, token: alice)
            let url = try #require(share.object["url"] as? String, "\(share.body)")
            _ = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: bob)
            _ = try await PushFixture.registerWebhook(client, url: receiver.url("bob"), token: bob)
            try await PushFixture.subscribe(client, "shared", kind: "DATABASE", scope: "SHARED", token: bob)
            // The owner subscribes too, so every commit to the zone writes the outbox.
            try await PushFixture.subscribe(client, "mine", kind: "DATABASE", token: alice)

            _ = try await save(client, token: alice, zone: "Family", [fast("f1", hours: 1, end: 1_700_000_000_000)])
            #expect(await eventually { await receiver.log.count() >= 1 }, "a participant was not told of a change in a shared zone")
            let removed = try await client.call("removeParticipant", """
                mutation { removeParticipant(zoneName: "Family", userRecordName: "\(harness.bob.userRecordName)") { url } }
                """, token: alice)
            #expect(removed.code == nil, "\(removed.body)")
            #expect(await PushFixture.drained(harness))
            let afterRemoval = await receiver.log.count()
            _ = try await save(client, token: alice, zone: "Family", [fast("f2", hours: 2, end: 1_700_000_000_000)])
            #expect(await PushFixture.drained(harness))
            #expect(await receiver.log.count() == afterRemoval, "a removed participant was told of a later change")
        }
    }

    // MARK: Web Push

    @Test("Web Push: an endpoint that decrypts (http_ece) gets the notice, VAPID-signed; a 410 removes the subscription")
    func webPush() async throws {
        let harness = try await GatewayHarness.make()
        let endpoint = try WebPushEndpointProcess()
        try await harness.test(configuration: PushFixture.configuration()) { client in
            let alice = harness.aliceToken
            let device = try await client.call("registerDevice", """
                mutation { registerDevice(kind: WEB_PUSH, endpoint: "\(endpoint.endpoint("browser"))", p256dh: "\(endpoint.p256dh)", auth: "\(endpoint.auth)") { deviceID kind endpoint } }
                """, token: alice)
            #expect(device.object["kind"] as? String == "WEB_PUSH", "\(device.body)")
            try await PushFixture.subscribe(client, "all", kind: "DATABASE", token: alice)
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("web-first", hours: 5, end: 1_700_000_000_000)])
            #expect(try await eventually { try await endpoint.received().count >= 1 }, "no Web Push message arrived")
            let message = try #require(try await endpoint.received().first)
            #expect((message["problems"] as? [String]) == [], "\(message)")
            let payload = try #require(message["payload"] as? String)
            let decoded = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
            #expect((decoded["canopy"] as? [String: Any])?["sid"] as? [String] == ["all"], "\(payload)")
            #expect(!payload.contains("web-first") && !payload.contains("_defaultZone"))
            #expect(message["urgency"] as? String == "normal")

            // A subscription the push service says is gone is removed.
            _ = try await client.call("registerDevice", """
                mutation { registerDevice(kind: WEB_PUSH, endpoint: "\(endpoint.endpoint("gone"))", p256dh: "\(endpoint.p256dh)", auth: "\(endpoint.auth)") { deviceID } }
                """, token: alice)
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("w2", hours: 5, end: 1_700_000_000_000)])
            #expect(try await eventually {
                let devices = try await client.call("devices", "{ devices { endpoint } }", token: alice).list
                return devices.count == 1
            }, "the gone endpoint's device was not removed")
        }
    }

    @Test("Web Push across a VAPID key rotation: a device is pushed with the key it subscribed with while that key is accepted, a device registered after with the new one, and a device of a retired key is dropped")
    func vapidRotation() async throws {
        let harness = try await GatewayHarness.make()
        let endpoint = try WebPushEndpointProcess()
        try await harness.test(configuration: PushFixture.configuration()) { client, database in
            await database.secrets.setRefreshInterval(.zero)
            let alice = harness.aliceToken
            @Sendable func register(_ name: String) async throws {
                let device = try await client.call("registerDevice", """
                    mutation { registerDevice(kind: WEB_PUSH, endpoint: "\(endpoint.endpoint(name))", p256dh: "\(endpoint.p256dh)", auth: "\(endpoint.auth)") { deviceID } }
                    """, token: alice)
                #expect(device.object["deviceID"] is String, "\(device.body)")
            }
            @Sendable func currentKey() async throws -> String {
                try #require(try await client.call("pushConfiguration", "{ pushConfiguration { vapidPublicKey } }", token: alice).object["vapidPublicKey"] as? String)
            }
            /// The VAPID key of each message to `path`, in order.
            @Sendable func keys(_ path: String) async throws -> [String] {
                try await endpoint.received().filter { $0["path"] as? String == path }.compactMap { $0["vapidKey"] as? String }
            }
            let before = try await currentKey()
            try await register("old")
            try await PushFixture.subscribe(client, "all", kind: "DATABASE", token: alice)

            let windowEnds = try await TestDatabase.withConnection(harness.endpoint) { connection in
                try await SecretRotation.rotate("vapid", overlap: .seconds(10), allowShortOverlap: true, connection: connection, logger: TestDatabase.logger)
            }
            let after = try await currentKey()
            #expect(after != before, "pushConfiguration still answers the old key")
            try await register("new")
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("r1", hours: 1, end: 1_700_000_000_000)])
            #expect(try await eventually {
                let new = try await keys("/push/new"), old = try await keys("/push/old")
                return !new.isEmpty && !old.isEmpty
            }, "not both devices were pushed")
            #expect(try await keys("/push/new") == [after], "the new device was not pushed with the new key")
            if let windowEnds, Date() < windowEnds.addingTimeInterval(-1) {
                #expect(try await keys("/push/old") == [before], "the old device was not pushed with the key it subscribed with")
            }
            let messages = try await endpoint.received()
            #expect(messages.allSatisfy { ($0["problems"] as? [String]) == [] }, "\(messages)")

            // Past the window the old key is retired: its device is dropped.
            try await Task.sleep(for: .seconds(max(0, (windowEnds ?? Date()).timeIntervalSinceNow) + 0.5))
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("r2", hours: 1, end: 1_700_000_000_000)])
            #expect(try await eventually {
                let devices = try await client.call("devices", "{ devices { endpoint } }", token: alice).list
                return devices.compactMap { $0["endpoint"] as? String } == [endpoint.endpoint("new")]
            }, "the device of the retired key was not dropped")
            #expect(try await eventually { try await keys("/push/new").count >= 2 }, "the new device missed the second change")
            #expect(try await keys("/push/old").allSatisfy { $0 == before }, "the old device was pushed with another key")
        }
    }

    // MARK: APNs

    @Test("APNs: a background push over HTTP/2 with an ES256 provider token and APNs's headers; 410 removes the device")
    func apns() async throws {
        let harness = try await GatewayHarness.make()
        let server = try await APNsTestServer(topic: "com.example.fasting")
        var settings = PushFixture.settings
        settings.apns = APNsCredentials(keyPEM: server.credentials.pem, keyID: server.credentials.keyID, teamID: server.credentials.teamID)
        settings.apnsSandboxURL = server.url
        settings.apnsProductionURL = server.url
        settings.trustedCertificateFile = server.certificateFile
        let token = String(repeating: "ab", count: 32)
        try await harness.test(configuration: PushFixture.configuration(settings)) { client in
            let alice = harness.aliceToken
            let device = try await client.call("registerDevice", """
                mutation { registerDevice(kind: APNS, apnsToken: "\(token.uppercased())", apnsEnvironment: SANDBOX, apnsTopic: "com.example.fasting") { deviceID apnsEnvironment apnsTopic } }
                """, token: alice)
            #expect(device.object["apnsEnvironment"] as? String == "SANDBOX", "\(device.body)")
            // Registering again (every launch) finds the same device.
            let again = try await client.call("registerDevice", """
                mutation { registerDevice(kind: APNS, apnsToken: "\(token)", apnsEnvironment: SANDBOX, apnsTopic: "com.example.fasting") { deviceID } }
                """, token: alice)
            #expect(again.object["deviceID"] as? String == device.object["deviceID"] as? String)
            try await PushFixture.subscribe(client, "all", kind: "DATABASE", token: alice)
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("apns-first", hours: 5, end: 1_700_000_000_000)])
            #expect(await eventually { await server.log.count() >= 1 }, "no APNs request arrived")
            let push = try #require(await server.log.received.first)
            #expect(push.problems.isEmpty, "\(push.problems)")
            #expect(push.path == "/3/device/\(token)")
            #expect(push.headers["apns-collapse-id"] == device.object["deviceID"] as? String)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(push.body.utf8)) as? [String: Any])
            #expect((body["aps"] as? [String: Any])?["content-available"] as? Int == 1, "\(push.body)")
            #expect((body["canopy"] as? [String: Any])?["sid"] as? [String] == ["all"], "\(push.body)")
            #expect(!push.body.contains("apns-first") && !push.body.contains("alert"))

            let dead = "dead" + String(repeating: "0", count: 60)
            _ = try await client.call("registerDevice", """
                mutation { registerDevice(kind: APNS, apnsToken: "\(dead)", apnsTopic: "com.example.fasting") { deviceID } }
                """, token: alice)
            _ = try await save(client, token: alice, zone: "_defaultZone", [fast("a2", hours: 5, end: 1_700_000_000_000)])
            #expect(await eventually { await server.log.received.contains { $0.status == 410 } }, "the dead token was never tried")
            #expect(await eventually { (try? await client.call("devices", "{ devices { deviceID } }", token: alice).list.count) == 1 },
                    "the device APNs called Unregistered was not removed")
        }
    }

    // MARK: Across a crash

    @Test("canopy serve killed with kill -9 while a notification is pending (the webhook failing) delivers it once started again",
          .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
    func deliveredAfterCrash() async throws {
        let admin = try await TestDatabase.shared.migratedDatabase()
        let (_, token) = try await addUser("alice", on: admin)
        let receiver = try await WebhookReceiver()
        await receiver.log.fail(with: 503, times: 1_000_000)
        let port = try EmbeddedCluster.freePort()
        let serve: @Sendable () throws -> Subprocess.Started = {
            try CanopyBinary.serve(databaseURL: admin.url, port: port, ["--no-console", "--rate-limit", "0"])
        }
        var gateway = try serve()
        defer { kill(gateway.pid, SIGKILL); _ = try? gateway.wait() }
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not answer /health")
        let call = { @Sendable (query: String) async throws -> String in
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/graphql")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Authorization", value: "Bearer \(token.string)")
            request.body = .bytes(ByteBuffer(data: try JSONSerialization.data(withJSONObject: ["query": query])))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(20))
            return String(buffer: try await response.body.collect(upTo: 1 << 20))
        }
        _ = try await call("mutation { registerDevice(kind: WEBHOOK, url: \"\(receiver.url("alice"))\") { deviceID } }")
        _ = try await call("mutation { saveSubscription(subscriptionID: \"all\", kind: DATABASE) { subscriptionID } }")
        let saved = try await call(#"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: "_defaultZone"}, save: [{recordName: "r", recordType: "Note", fields: {n: 1}}]) { saved { recordName } } }"#)
        #expect(saved.contains("\"r\""), "\(saved)")
        #expect(await eventually { await receiver.log.count() >= 1 }, "the first attempt never came")

        kill(gateway.pid, SIGKILL)
        _ = try? gateway.wait()
        let attempts = await receiver.log.count()
        let pendingAfterKill = try await TestDatabase.withConnection(admin) { connection in
            try await connection.query("SELECT count(*) FROM canopy.push_deliveries", logger: TestDatabase.logger).collect().first?.decode(Int64.self)
        }
        #expect(pendingAfterKill == 1, "the undelivered notification is not kept")
        await receiver.log.fail(with: 0, times: 0)

        gateway = try serve()
        #expect(try await CanopyBinary.waitUntilServing(port: port), "canopy serve did not start again")
        // Within the back-off, or the dead process's claim lease (30 s).
        #expect(await eventually(timeout: .seconds(60)) { await receiver.log.received.contains { $0.status == 204 } },
                "the pending notification was not delivered after the restart")
        let delivered = await receiver.log.received.filter { $0.status == 204 }
        #expect(delivered.count == 1)
        let ids = Set(await receiver.log.received.map { $0.headers["canopy-notification"] ?? "" })
        #expect(ids.count == 1, "the restarted gateway sent another notification, not the pending one")
        print("push across a crash: \(attempts) failed attempts before kill -9, delivered once after the restart")
        kill(gateway.pid, SIGTERM)
        _ = try? gateway.wait()
    }
}


@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

/// CloudKit JS's notifications, as its `registerForNotifications` asks for
/// them (issue 66): `tokens/create`, `tokens/register` of that token, and
/// long polls of the `webcourierURL`, each answered one notification in
/// CloudKit's push payload shape, or 204 when none came in time.
@Suite("Web Services: the web courier", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct WebServicesCourierTests {
    static func configuration(wait: Duration) -> GatewayConfiguration {
        var configuration = PushFixture.configuration()
        var settings = WebServicesSettings(container: WebServicesFixture.container)
        settings.courierWait = wait
        settings.courierInterval = .milliseconds(200)
        configuration.webServices = settings
        return configuration
    }

    /// A long poll of the courier URL's path on the live gateway, on a
    /// connection of its own (as a page's XMLHttpRequest is), so the
    /// test's client may change records while it waits.
    static func poll(_ client: some TestClientProtocol, _ url: String) async throws -> WebServicesAnswer {
        let path = try #require(URL(string: url)?.path)
        let port = try #require(client.port)
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)"), timeout: .seconds(90))
        let body = try await response.body.collect(upTo: 1 << 20)
        let parsed = body.readableBytes == 0 ? [:] : (try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any] ?? [:])
        return WebServicesAnswer(status: HTTPResponse.Status(code: Int(response.status.code)), body: parsed)
    }

    @Test("tokens/create answers a token and a webcourierURL; tokens/register of it registers no APNs device; a long poll answers each subscription that fired, in CloudKit's payload shape, one a poll, waiting for a change that comes while it waits, and 204 when nothing comes; an unknown URL is 404")
    func courier() async throws {
        let harness = try await GatewayHarness.make()
        let token = try await WebServicesFixture.apiToken(on: harness.endpoint)
        let courierURL = try await harness.test(configuration: Self.configuration(wait: .seconds(30)), live: true) { client in
            func call(_ subpath: String, _ body: String) async throws -> WebServicesAnswer {
                try await client.webServices(subpath, body, apiToken: token, webAuthToken: harness.aliceToken)
            }
            let created = try await call("tokens/create", #"{"apnsEnvironment": "development"}"#)
            #expect(created.status == .ok && created.body["apnsEnvironment"] as? String == "development", "\(created.body)")
            let apnsToken = try #require(created.body["apnsToken"] as? String, "\(created.body)")
            let url = try #require(created.body["webcourierURL"] as? String, "\(created.body)")
            #expect(apnsToken.count == 64 && url.hasSuffix("/database/1/\(WebServicesFixture.container)/production/courier/\(apnsToken)"), "\(created.body)")
            let registered = try await call("tokens/register", #"{"apnsEnvironment": "development", "apnsToken": "\#(apnsToken)"}"#)
            #expect(registered.status == .ok && registered.body["apnsToken"] as? String == apnsToken, "\(registered.body)")
            let devices = try await client.call("devices", "{ devices { kind } }", token: harness.aliceToken)
            #expect(devices.list.isEmpty, "neither an APNs device nor the courier is listed: \(devices.body)")

            _ = try await call("private/subscriptions/modify", #"""
                {"operations": [
                  {"operationType": "create", "subscription": {"subscriptionID": "home", "subscriptionType": "zone", "zoneID": {"zoneName": "_defaultZone"}}},
                  {"operationType": "create", "subscription": {"subscriptionID": "notes", "subscriptionType": "query", "query": {"recordType": "Note"}}}
                ]}
                """#)
            // A poll that waits while the change is made.
            async let waiting = Self.poll(client, url)
            try await Task.sleep(for: .milliseconds(500))
            let saved = try await call("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Note", "recordName": "n1", "fields": {}}}]}"#)
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.body)")
            let first = try await waiting
            let second = try await Self.poll(client, url)
            var fired: [String: [String: Any]] = [:]
            for answer in [first, second] {
                #expect(answer.status == .ok, "\(answer.status) \(answer.body)")
                let ck = try #require(answer.body["ck"] as? [String: Any], "\(answer.body)")
                #expect(ck["cid"] as? String == WebServicesFixture.container && (ck["nid"] as? String).flatMap(UUID.init(uuidString:)) != nil, "\(ck)")
                #expect((answer.body["aps"] as? [String: Any])?["content-available"] as? Int == 1, "\(answer.body)")
                for key in ["fet", "qry", "met"] {
                    if let entry = ck[key] as? [String: Any], let sid = entry["sid"] as? String { fired[sid] = entry.merging(["kind": key]) { a, _ in a } }
                }
                #expect(!"\(answer.body)".contains("n1") && !"\(answer.body)".contains("_defaultZone"), "no record's or zone's name: \(answer.body)")
            }
            #expect(fired["home"]?["kind"] as? String == "fet" && fired["notes"]?["kind"] as? String == "qry", "\(fired)")
            #expect(fired.values.allSatisfy { $0["dbs"] as? Int == 2 }, "the private database: \(fired)")

            let unknown = try await Self.poll(client, url.replacingOccurrences(of: apnsToken, with: String(repeating: "0", count: 64)))
            #expect(unknown.status == .notFound && unknown.code == "NOT_FOUND", "\(unknown.body)")
            let malformed = try await Self.poll(client, url.replacingOccurrences(of: apnsToken, with: "nope"))
            #expect(malformed.status == .notFound, "\(malformed.body)")
            let anonymous = try await client.webServices("tokens/create", "{}", apiToken: token)
            #expect(anonymous.status.code == 421, "a courier is a person's: \(anonymous.body)")
            return url
        }
        // Nothing more comes: the poll answers 204 after its wait.
        try await harness.test(configuration: Self.configuration(wait: .seconds(2)), live: true) { client in
            let quiet = try await Self.poll(client, courierURL)
            #expect(quiet.status == .noContent, "\(quiet.status) \(quiet.body)")
        }
    }
}

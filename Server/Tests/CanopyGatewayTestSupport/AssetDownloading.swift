import CanopyAdmin
import CanopyAssets
import CanopyEncoding
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// What the asset download tests share (the database tier's
/// `AssetDownloadTests`, the stories' backup and restore): a seeded record
/// holding an upload, and reading and fetching its URL.
protocol AssetDownloading {}

/// The helpers of `AssetDownloading`, for a suite that only needs them.
struct AssetDownloads: AssetDownloading {}

extension AssetDownloading {
    static var text: String { "0123456789abcdefghij" }

    /// Alice's record `doc` in zone Z holding an upload of `text`; Bob, a
    /// READ_ONLY participant of Z. Returns the sha256.
    func seed(_ client: any TestClientProtocol, _ harness: GatewayHarness) async throws -> String {
        _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Z\") { zoneName } }", token: harness.aliceToken)
        let uploaded = try await client.execute(uri: "/assets", method: .post,
                                                headers: [.authorization: "Bearer \(harness.aliceToken)", .contentType: "text/plain; charset=utf-8"],
                                                body: ByteBuffer(string: Self.text))
        let json = try responseJSON(uploaded.body)
        _ = try await save(client, token: harness.aliceToken, zone: "Z", [
            ["recordName": "doc", "recordType": "Doc", "fields": ["file": ["type": "ASSET", "uploadToken": json["uploadToken"] as? String ?? ""]]],
        ])
        let share = try await client.call("saveShare", """
            mutation { saveShare(zoneName: "Z", participants: [{userRecordName: "\(harness.bob.userRecordName)", permission: READ_ONLY}]) { url } }
            """, token: harness.aliceToken)
        _ = try await client.call("acceptShare", "mutation($u: String!) { acceptShare(url: $u) { status } }",
                                  ["u": share.object["url"] as? String ?? ""], token: harness.bobToken)
        return json["sha256"] as? String ?? ""
    }

    /// The record's asset value as `token` reads it (nil: not readable).
    func read(_ client: any TestClientProtocol, _ harness: GatewayHarness, token: String, shared: Bool = false) async throws -> [String: Any]? {
        let zone = shared ? "{zoneName: \"Z\", ownerName: \"\(harness.alice.userRecordName)\"}" : "{zoneName: \"Z\"}"
        let answer = try await client.call("lookup", """
            { lookup(scope: \(shared ? "SHARED" : "PRIVATE"), zone: \(zone), recordNames: ["doc"]) { record { fields } } }
            """, token: token)
        let record = answer.list.first?["record"] as? [String: Any]
        return (record?["fields"] as? [String: Any])?["file"] as? [String: Any]
    }

    /// The path and query of a download URL (the test server's port differs from the public URL's).
    func path(_ url: String) -> String {
        guard let range = url.range(of: "/assets/") else { return url }
        return String(url[range.lowerBound...])
    }

    func get(_ client: any TestClientProtocol, _ uri: String, headers: HTTPFields = [:]) async throws -> Fetched {
        let response = try await client.execute(uri: uri, method: .get, headers: headers)
        return Fetched(status: response.status, headers: response.headers, body: String(buffer: response.body))
    }
}

struct Fetched: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: String
}

@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyAssets
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Testing

/// `POST /assets` over real HTTP (docs/API.md §11): the bytes stream into a real
/// directory store and the upload is recorded for its uploader only.
@Suite("Asset uploads")
struct AssetUploadTests {
    static let bytes: [UInt8] = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }

    /// A harness and a store in a fresh directory, limited to `limit` bytes.
    /// A response's status and JSON body.
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var body: ByteBuffer
        var json: [String: Any] { (try? responseJSON(body)) ?? [:] }
        var text: String { String(buffer: body) }
    }

    func upload(_ client: any TestClientProtocol, _ bytes: [UInt8], token: String?, contentType: String = "image/png")
        async throws -> Answer {
        var headers: HTTPFields = [.contentType: contentType]
        if let token { headers[.authorization] = "Bearer \(token)" }
        let response = try await client.execute(uri: "/assets", method: .post, headers: headers, body: ByteBuffer(bytes: bytes))
        return Answer(status: response.status, body: response.body)
    }

    func files(under directory: URL) -> [String] {
        regularFiles(under: directory).map { URL(fileURLWithPath: $0).lastPathComponent }
    }

    /// SHA-256 by `sha256sum`, not by the code under test.
    func sha256sum(_ bytes: [UInt8]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-sum-\(UUID().uuidString)")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try CanopyTestSupport.sha256sum(file: file.path)
    }

    func uploads(_ harness: GatewayHarness) async throws -> [String] {
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts("""
                SELECT concat_ws(' ', u.name, p.sha256, p.size, p.content_type, p.used_at IS NULL,
                                 p.expires_at BETWEEN now() + interval '23 hours 59 minutes' AND now() + interval '24 hours')
                  FROM canopy.uploads p JOIN canopy.users u ON u.id = p.user_id ORDER BY p.id
                """).compactMap { $0 }
        }
    }

    @Test("an upload streams into the store under its SHA-256 and answers a token only its uploader's row holds")
    func upload() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        let digest = try sha256sum(Self.bytes)
        let answer = try await harness.test(configuration: configuration, live: true) { client in
            try await upload(client, Self.bytes, token: harness.aliceToken)
        }
        #expect(answer.status == .ok, "\(answer.text)")
        #expect(answer.json["sha256"] as? String == digest)
        #expect(answer.json["size"] as? Int == Self.bytes.count)
        let token = try #require(answer.json["uploadToken"] as? String)
        #expect(token.hasPrefix("upl_") && token.count == 68, "\(token)")
        #expect(files(under: directory) == [digest])
        #expect(try await uploads(harness) == ["alice \(digest) \(Self.bytes.count) image/png t t"])
        let stored = try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.texts(PostgresQuery(unsafeSQL: """
                SELECT (token_hash = sha256(convert_to('\(token)', 'UTF8')))::text FROM canopy.uploads
                """))
        }
        #expect(stored == ["true"], "the database keeps the token's hash, not the token")

        // Bob sees none of Alice's uploads; the same bytes again are stored once.
        let again = try await harness.test(configuration: configuration, live: true) { client in
            try await upload(client, Self.bytes, token: harness.bobToken, contentType: "")
        }
        #expect(again.status == .ok)
        #expect(again.json["uploadToken"] as? String != token)
        #expect(files(under: directory) == [digest])
        #expect(try await uploads(harness).last == "bob \(digest) \(Self.bytes.count) application/octet-stream t t")
        let seenByBob = try await TestDatabase.withConnection(harness.endpoint.asUser("canopy_gateway", password: nil)) { connection in
            try await connection.asUser(harness.bob.id) { connection in
                try await connection.texts("SELECT count(*)::text FROM canopy.uploads")
            }
        }
        #expect(seenByBob == ["1"])
    }

    @Test("without a token, 401; over --max-asset-size, 413; neither keeps a file or a row")
    func refusals() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets(maximumSize: 100_000)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (anonymous, tooLarge) = try await harness.test(configuration: configuration, live: true) { client in
            (try await upload(client, Self.bytes, token: nil), try await upload(client, Self.bytes, token: harness.aliceToken))
        }
        #expect(anonymous.status == .unauthorized)
        #expect(tooLarge.status == .contentTooLarge, "\(tooLarge.text)")
        let error = (tooLarge.json["errors"] as? [[String: Any]])?.first
        #expect((error?["extensions"] as? [String: Any])?["code"] as? String == "LIMIT_EXCEEDED", "\(tooLarge.text)")
        #expect((error?["message"] as? String)?.contains("100000 bytes") == true, "\(tooLarge.text)")
        #expect(files(under: directory).isEmpty)
        #expect(try await uploads(harness).isEmpty)

        let small = try await harness.test(configuration: configuration, live: true) { client in
            try await upload(client, Array(Self.bytes[0..<100_000]), token: harness.aliceToken)
        }
        #expect(small.status == .ok, "exactly the limit is accepted: \(small.text)")
    }

    @Test("without an asset store there is no /assets route")
    func noStore() async throws {
        let harness = try await GatewayHarness.make()
        let status = try await harness.test { client in
            try await client.execute(uri: "/assets", method: .post, headers: [.authorization: "Bearer \(harness.aliceToken)"],
                                     body: ByteBuffer(bytes: [1, 2, 3])).status
        }
        #expect(status == .notFound)
    }
}

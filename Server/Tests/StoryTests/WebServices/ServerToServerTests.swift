@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyIdentity
import CanopyRequestStore
import CanopyTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

/// Server-to-server keys: a correct signature, a wrong one, an old date, a
/// replay, a tampered body, the key refused outside what it was granted,
/// and a revoked key (docs/WEB_SERVICES.md, "Server-to-server keys").
@Suite("Web Services: server-to-server keys", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct ServerToServerTests {
    /// A key made as the reference says, registered with `canopy keys add`.
    struct Key {
        let privateKey: P256.Signing.PrivateKey
        let keyID: String
    }

    static func register(on endpoint: DatabaseEndpoint, as user: String, databases: [String] = []) throws -> Key {
        let privateKey = P256.Signing.PrivateKey()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-key-\(UUID().uuidString).pem")
        try privateKey.publicKey.pemRepresentation.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try CanopyBinary.run(["keys", "add", "--public-key", file.path, "--container", WebServicesFixture.container, "--as", user, "--json",
                                           "--database-url", endpoint.url] + databases.flatMap { ["--database", $0] })
        #expect(result.succeeded, "\(result.output)")
        let line = result.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        return Key(privateKey: privateKey, keyID: try #require(object?["keyID"] as? String, "\(result.output)"))
    }

    static func dateText(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false, timeZone: .gmt))
    }

    /// Signs and sends; `signedBody`, `signedQuery` and `signature` may
    /// change what is signed from what is sent. `query` is sent after the
    /// path; the path alone is signed (the reference's form) unless
    /// `signedQuery` names a query string to sign with it (CloudKit JS's).
    static func send(
        _ client: some TestClientProtocol, key: Key, subpath: String, body: String, date: Date = Date(),
        signedBody: String? = nil, signature: String? = nil, query: String? = nil, signedQuery: String? = nil
    ) async throws -> WebServicesAnswer {
        let path = "/database/1/\(WebServicesFixture.container)/production/\(subpath)"
        let stamp = dateText(date)
        let digest = Data(SHA256.hash(data: Data((signedBody ?? body).utf8))).base64EncodedString()
        let message = Data("\(stamp):\(digest):\(path)\(signedQuery.map { "?\($0)" } ?? "")".utf8)
        let signed = try key.privateKey.signature(for: message).derRepresentation.base64EncodedString()
        let headers: HTTPFields = [
            .contentType: "text/plain",
            HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!: key.keyID,
            HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!: stamp,
            HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!: signature ?? signed,
        ]
        let response = try await client.execute(uri: path + (query.map { "?\($0)" } ?? ""), method: .post, headers: headers, body: ByteBuffer(string: body))
        let parsed = response.body.readableBytes == 0 ? [:] : (try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any] ?? [:])
        return WebServicesAnswer(status: response.status, body: parsed)
    }

    /// One signature, made once (over the path, with `query` when given),
    /// sent twice: the second is a replay.
    static func sendTwice(
        _ client: some TestClientProtocol, key: Key, subpath: String, body: String, query: String? = nil
    ) async throws -> [WebServicesAnswer] {
        let path = "/database/1/\(WebServicesFixture.container)/production/\(subpath)\(query.map { "?\($0)" } ?? "")"
        let stamp = dateText(Date())
        let message = Data("\(stamp):\(Data(SHA256.hash(data: Data(body.utf8))).base64EncodedString()):\(path)".utf8)
        let signature = try key.privateKey.signature(for: message).derRepresentation.base64EncodedString()
        var answers: [WebServicesAnswer] = []
        for _ in 0..<2 {
            answers.append(try await send(client, key: key, subpath: subpath, body: body, date: parse(stamp), signature: signature, query: query))
        }
        return answers
    }

    /// Issue 66: CloudKit JS signs the request's path with the query string
    /// it sends (`?ckjsBuildVersion=…&ckjsVersion=…`); the reference signs
    /// the path alone. Both verify; the query signed must be the one sent,
    /// and a signature is still used once.
    @Test("a signature over the path with its query string (CloudKit JS's) verifies once, as one over the path alone does; over another query it is refused")
    func pathWithQuery() async throws {
        let harness = try await GatewayHarness.make()
        let key = try Self.register(on: harness.endpoint, as: "alice")
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let query = #"{"query": {"recordType": "Notice"}}"#
            let sent = "ckjsBuildVersion=2310ProjectDev27&ckjsVersion=1.2.0"
            let withQuery = try await Self.send(client, key: key, subpath: "public/records/query", body: query, query: sent, signedQuery: sent)
            #expect(withQuery.status == .ok, "path and query signed: \(withQuery.body)")
            let pathAlone = try await Self.send(client, key: key, subpath: "public/records/query", body: query, query: sent)
            #expect(pathAlone.status == .ok, "the path alone signed, a query sent: \(pathAlone.body)")
            let otherQuery = try await Self.send(client, key: key, subpath: "public/records/query", body: query,
                                                 query: "ckjsBuildVersion=1&ckjsVersion=9.9.9", signedQuery: sent)
            #expect(otherQuery.status == .unauthorized && (otherQuery.body["reason"] as? String)?.contains("does not verify") == true, "\(otherQuery.body)")
            let signedOnlyQuery = try await Self.send(client, key: key, subpath: "public/records/query", body: query, signedQuery: sent)
            #expect(signedOnlyQuery.status == .unauthorized, "a query signed but not sent: \(signedOnlyQuery.body)")
            // The same path-and-query signature twice: the second is a replay.
            let answers = try await Self.sendTwice(client, key: key, subpath: "public/records/query", body: query, query: sent)
            #expect(answers.map(\.status) == [.ok, .unauthorized], "\(answers.map(\.body))")
        }
    }

    @Test("a signed request acts as the key's user in the public database; wrong, old, replayed, tampered and revoked signatures are refused")
    func signatures() async throws {
        let harness = try await GatewayHarness.make()
        let key = try Self.register(on: harness.endpoint, as: "alice")
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let save = #"{"operations": [{"operationType": "create", "record": {"recordType": "Notice", "recordName": "n1", "fields": {"text": {"value": "hello"}}}}]}"#
            let saved = try await Self.send(client, key: key, subpath: "public/records/modify", body: save)
            #expect(saved.status == .ok && saved.records.first?["recordName"] as? String == "n1", "\(saved.body)")
            #expect((saved.records.first?["created"] as? [String: Any])?["userRecordName"] as? String == harness.alice.userRecordName, "the key acts as its user: \(saved.body)")
            let query = #"{"query": {"recordType": "Notice"}}"#
            let read = try await Self.send(client, key: key, subpath: "public/records/query", body: query)
            #expect(read.status == .ok && read.records.count == 1, "\(read.body)")

            // Another key's signature under this key's ID.
            let stranger = Key(privateKey: P256.Signing.PrivateKey(), keyID: key.keyID)
            let wrong = try await Self.send(client, key: stranger, subpath: "public/records/query", body: query)
            #expect(wrong.status == .unauthorized && wrong.code == "AUTHENTICATION_FAILED" && (wrong.body["reason"] as? String)?.contains("does not verify") == true, "\(wrong.body)")
            let garbage = try await Self.send(client, key: key, subpath: "public/records/query", body: query, signature: "bm90IGEgc2lnbmF0dXJl")
            #expect(garbage.status == .unauthorized, "\(garbage.body)")
            // Signed ten minutes ago (or ahead): too old.
            let old = try await Self.send(client, key: key, subpath: "public/records/query", body: query, date: Date().addingTimeInterval(-600))
            #expect(old.status == .unauthorized && (old.body["reason"] as? String)?.contains("minutes from the server's clock") == true, "\(old.body)")
            let ahead = try await Self.send(client, key: key, subpath: "public/records/query", body: query, date: Date().addingTimeInterval(600))
            #expect(ahead.status == .unauthorized, "\(ahead.body)")
            // The body changed after signing.
            let tampered = try await Self.send(client, key: key, subpath: "public/records/query", body: #"{"query": {"recordType": "Secret"}}"#, signedBody: query)
            #expect(tampered.status == .unauthorized, "\(tampered.body)")
            // The same signature twice: the second is a replay.
            let answers = try await Self.sendTwice(client, key: key, subpath: "public/records/query", body: query)
            let statuses = answers.map(\.status)
            let reasons = answers.map { $0.body["reason"] as? String ?? "" }
            #expect(statuses == [.ok, .unauthorized] && reasons[1].contains("used before"), "\(statuses) \(reasons)")
            // CloudKit's rule: a key reaches the public database only.
            let privateRead = try await Self.send(client, key: key, subpath: "private/records/query", body: query)
            #expect(privateRead.status == .forbidden && privateRead.code == "ACCESS_DENIED", "\(privateRead.body)")
            let sharedRead = try await Self.send(client, key: key, subpath: "shared/zones/list", body: "")
            #expect(sharedRead.status == .forbidden && sharedRead.code == "ACCESS_DENIED", "\(sharedRead.body)")
        }
        // Revoked: refused once the key cache (4 s) has passed.
        let revoked = try CanopyBinary.run(["keys", "revoke", String(key.keyID.prefix(12)), "--database-url", harness.endpoint.url])
        #expect(revoked.succeeded && revoked.output.contains("revoked \(key.keyID)"), "\(revoked.output)")
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let answer = try await Self.send(client, key: key, subpath: "public/records/query", body: #"{"query": {"recordType": "Notice"}}"#)
            #expect(answer.status == .unauthorized && answer.code == "AUTHENTICATION_FAILED", "\(answer.body)")
        }
    }

    /// Issue 48: ECDSA signatures are malleable and the header takes DER or
    /// raw bytes, so one signature has four spellings: DER and raw `r||s`,
    /// DER and raw `r||(n−s)`. All four verify; only the first sent is used.
    @Test("one signature sent in its four spellings (DER, raw, and each with n−s) is one use: one record made, three replays refused")
    func malleableReplay() async throws {
        let harness = try await GatewayHarness.make()
        let key = try Self.register(on: harness.endpoint, as: "alice")
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let subpath = "public/records/modify"
            let path = "/database/1/\(WebServicesFixture.container)/production/\(subpath)"
            let stamp = Self.dateText(Date())
            var answers: [WebServicesAnswer] = []
            // A create of a fresh name each time the same signed body is
            // sent would be EXISTS on the second; forceUpdate of a counter
            // record shows every use, so four uses would be four saves.
            let body = #"{"operations": [{"operationType": "forceUpdate", "record": {"recordType": "Notice", "recordName": "counter", "fields": {"text": {"value": "hit"}}}}]}"#
            let message = Data("\(stamp):\(Data(SHA256.hash(data: Data(body.utf8))).base64EncodedString()):\(path)".utf8)
            let raw = try key.privateKey.signature(for: message).rawRepresentation
            let twin = Self.malleableTwin(raw)
            #expect(twin != raw)
            let spellings = [
                try P256.Signing.ECDSASignature(rawRepresentation: raw).derRepresentation, raw,
                try P256.Signing.ECDSASignature(rawRepresentation: twin).derRepresentation, twin,
            ]
            for spelling in spellings {
                #expect(key.privateKey.publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: spelling.count == 64 ? spelling : P256.Signing.ECDSASignature(derRepresentation: spelling).rawRepresentation), for: message),
                        "every spelling is a valid signature, so only the replay record can refuse it")
                answers.append(try await Self.send(client, key: key, subpath: subpath, body: body, date: Self.parse(stamp), signature: spelling.base64EncodedString()))
            }
            #expect(answers.map(\.status) == [.ok, .unauthorized, .unauthorized, .unauthorized], "\(answers.map(\.body))")
            #expect(answers.dropFirst().allSatisfy { ($0.body["reason"] as? String)?.contains("used before") == true }, "\(answers.map(\.body))")
        }
        // What the database holds: one use noted for four spellings.
        let uses = try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.query("SELECT count(*)::int FROM canopy.server_key_signatures", logger: TestDatabase.logger)
                .collect().first?.decode(Int.self)
        }
        #expect(uses == 1, "one use noted for four spellings")
    }

    /// `r||(n−s)`, computed here apart from the gateway's own code.
    static func malleableTwin(_ raw: Data) -> Data {
        let order: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
        ]
        let bytes = [UInt8](raw)
        var twin = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            let digit = Int(order[index]) - Int(bytes[32 + index]) - borrow
            borrow = digit < 0 ? 1 : 0
            twin[index] = UInt8((digit + 256) % 256)
        }
        return Data(bytes[..<32] + twin)
    }

    static func parse(_ text: String) -> Date {
        (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: false, timeZone: .gmt))) ?? Date()
    }

    @Test("a key the operator granted the private database reaches its user's own zones, and no one else's")
    func grantedPrivate() async throws {
        let harness = try await GatewayHarness.make()
        let key = try Self.register(on: harness.endpoint, as: "bob", databases: ["public", "private"])
        let aliceAPI = try await WebServicesFixture.apiToken(on: harness.endpoint)
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            _ = try await client.webServices("private/records/modify", #"{"operations": [{"operationType": "create", "record": {"recordType": "Diary", "recordName": "secret", "fields": {"text": {"value": "alice's"}}}}]}"#, apiToken: aliceAPI, webAuthToken: harness.aliceToken)
            let own = try await Self.send(client, key: key, subpath: "private/records/modify", body: #"{"operations": [{"operationType": "create", "record": {"recordType": "Diary", "recordName": "mine", "fields": {}}}]}"#)
            #expect(own.status == .ok && own.records.first?["serverErrorCode"] == nil, "\(own.body)")
            let query = try await Self.send(client, key: key, subpath: "private/records/query", body: #"{"query": {"recordType": "Diary"}}"#)
            #expect(query.records.compactMap { $0["recordName"] as? String } == ["mine"], "bob's key sees bob's records, not alice's: \(query.body)")
            let lookAtAlice = try await Self.send(client, key: key, subpath: "private/records/lookup", body: #"{"zoneID": {"zoneName": "_defaultZone", "ownerRecordName": "\#(harness.alice.userRecordName)"}, "records": [{"recordName": "secret"}]}"#)
            #expect(lookAtAlice.status == .notFound && lookAtAlice.code == "ZONE_NOT_FOUND", "alice's zone is not bob's to see: \(lookAtAlice.status) \(lookAtAlice.body)")
            let shared = try await Self.send(client, key: key, subpath: "shared/zones/list", body: "")
            #expect(shared.status == .forbidden, "shared was not granted: \(shared.body)")
        }
        let list = try CanopyBinary.run(["keys", "list", "--database-url", harness.endpoint.url])
        #expect(list.succeeded && list.output.contains(key.keyID) && list.output.contains("private,public"), "\(list.output)")
    }
}

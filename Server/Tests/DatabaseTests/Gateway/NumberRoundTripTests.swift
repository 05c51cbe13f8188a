@testable import CanopyGatewayTestSupport
import CanopyAssets
import CanopyGateway
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// A number reads back as the client wrote it, whatever else the record
/// holds (issue 34): the gateway writes PostgreSQL's JSON through without a
/// second parse, also when it signs asset URLs into the answer. Bodies are
/// written and read as text here: a JSON library would round the very
/// differences this suite guards (1.0 against 1).
@Suite("Numbers read back as written")
struct NumberRoundTripTests {
    /// The fields both records hold, as JSON text.
    static let numbers = #""d1": 1.0, "big": 9007199254740993, "small": 1.5e-7, "negative": -2.50"#

    func post(_ client: any TestClientProtocol, _ body: String, token: String) async throws -> String {
        let response = try await client.execute(uri: "/graphql", method: .post,
                                                headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                                                body: ByteBuffer(string: body))
        let text = String(buffer: response.body)
        #expect(response.status == .ok, "\(text)")
        #expect(!text.contains("\"errors\":[{"), "\(text)")
        return text
    }

    func save(_ client: any TestClientProtocol, recordName: String, fields: String, token: String) async throws {
        let query = #"mutation($s: [RecordInput!]) { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Z\"}, save: $s) { saved { recordName } errors { code message } } }"#
        _ = try await post(client, #"{"query": ""# + query + #"", "variables": {"s": [{"recordName": ""# + recordName
            + #"", "recordType": "Item", "fields": {"# + fields + "}}]}}", token: token)
    }

    /// The record's answer as the gateway wrote it.
    func lookup(_ client: any TestClientProtocol, _ recordName: String, token: String) async throws -> String {
        let query = #"{ lookup(scope: PRIVATE, zone: {zoneName: \"Z\"}, recordNames: [\"\#(recordName)\"]) { record { fields } } }"#
        return try await post(client, #"{"query": ""# + query + #""}"#, token: token)
    }

    /// The text of field `name`'s value in an answer.
    func valueText(_ name: String, in answer: String) -> String? {
        guard let key = answer.range(of: "\"\(name)\":") else { return nil }
        let rest = answer[key.upperBound...].drop(while: { $0 == " " })
        return String(rest.prefix(while: { !",}] ".contains($0) }))
    }

    @Test("DOUBLE 1.0, INT64 2^53+1, a small and a negative double read back as the same text with and without an asset beside them")
    func sameTextBesideAnAsset() async throws {
        let (harness, configuration, directory) = try await GatewayHarness.withAssets()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await harness.test(configuration: configuration, live: true) { client in
            _ = try await post(client, #"{"query": "mutation { saveZone(zoneName: \"Z\") { zoneName } }"}"#, token: harness.aliceToken)
            let upload = try await client.execute(uri: "/assets", method: .post,
                                                  headers: [.authorization: "Bearer \(harness.aliceToken)", .contentType: "text/plain"],
                                                  body: ByteBuffer(string: "a photo"))
            let uploadToken = try #require(try responseJSON(upload.body)["uploadToken"] as? String)

            try await save(client, recordName: "plain", fields: Self.numbers, token: harness.aliceToken)
            try await save(client, recordName: "photo", fields: Self.numbers + #", "photo": {"type": "ASSET", "uploadToken": ""# + uploadToken + #""}"#,
                           token: harness.aliceToken)
            let plain = try await lookup(client, "plain", token: harness.aliceToken)
            let photo = try await lookup(client, "photo", token: harness.aliceToken)
            #expect(photo.contains("\"downloadURL\""), "\(photo)")

            #expect(valueText("d1", in: plain) == "1.0", "\(plain)")
            #expect(valueText("big", in: plain) == "9007199254740993", "\(plain)")
            for name in ["d1", "big", "small", "negative"] {
                #expect(valueText(name, in: plain) != nil, "\(name) in \(plain)")
                #expect(valueText(name, in: photo) == valueText(name, in: plain), "\(name): \(photo) against \(plain)")
            }
            // The keys keep PostgreSQL's order: the asset's answer is the
            // plain one with the photo added, not a re-serialised object.
            let names = ["big", "d1", "small", "negative"]
            let plainOrder = names.sorted { (plain.range(of: "\"\($0)\":")?.lowerBound ?? plain.endIndex) < (plain.range(of: "\"\($1)\":")?.lowerBound ?? plain.endIndex) }
            let photoOrder = names.sorted { (photo.range(of: "\"\($0)\":")?.lowerBound ?? photo.endIndex) < (photo.range(of: "\"\($1)\":")?.lowerBound ?? photo.endIndex) }
            #expect(photoOrder == plainOrder, "\(photo) against \(plain)")
        }
    }

    @Test("a number written with an exponent is a DOUBLE, however large: 1e300 saves and reads back as a double")
    func exponentIsDouble() async throws {
        let harness = try await GatewayHarness.make()
        try await harness.test(live: true) { client in
            _ = try await post(client, #"{"query": "mutation { saveZone(zoneName: \"Z\") { zoneName } }"}"#, token: harness.aliceToken)
            try await save(client, recordName: "huge", fields: #""huge": 1e300, "large": 2E+20"#, token: harness.aliceToken)
            let answer = try await lookup(client, "huge", token: harness.aliceToken)
            let huge = try #require(valueText("huge", in: answer), "\(answer)")
            let large = try #require(valueText("large", in: answer), "\(answer)")
            #expect(Double(huge) == 1e300, "\(huge)")
            #expect(Double(large) == 2e20, "\(large)")
            // Written as a double, so a client reads a double back.
            #expect(huge.contains(".") || huge.lowercased().contains("e"), "\(huge)")
            #expect(large.contains(".") || large.lowercased().contains("e"), "\(large)")
        }
    }
}

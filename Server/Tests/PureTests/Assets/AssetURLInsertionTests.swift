import CanopyAssets
import CanopyEncoding
import Crypto
import Foundation
import Testing

/// The download URL is written into PostgreSQL's text without a second
/// parse (issue 34): every byte but the insertion and the removed mark
/// stays as it was. Only digests the database marked are signed (issue 64).
@Suite("Signing download URLs into an answer")
struct AssetURLInsertionTests {
    let signer = AssetURLSigner(key: SymmetricKey(data: Data(repeating: 7, count: 32)), publicURL: "https://canopy.example", lifetime: 3600)
    static let digest = String(repeating: "ab", count: 32)
    /// The digest as the database's SQL writes it into an answer (sql/functions/asset_marks.sql).
    static let marked = AssetMarker.prefix + digest

    /// `json` with each inserted URL removed, to compare with the input.
    func withoutURLs(_ json: String) -> String {
        json.replacingOccurrences(of: #","downloadURL":"[^"]*""#, with: "", options: .regularExpression)
    }

    /// The input as the client must see it: every mark gone.
    func unmarked(_ json: String) -> String {
        json.replacingOccurrences(of: AssetMarker.prefix, with: "")
    }

    @Test("a marked asset value gets a URL before its closing brace and loses its mark; numbers, spacing and key order stay as PostgreSQL wrote them")
    func insertsInPlace() throws {
        let input = #"[{"recordName" : "a", "fields" : {"d1": 1.0, "small": 0.00000015, "photo": {"size": 7, "type": "ASSET", "sha256": "\#(Self.marked)", "contentType": "image/png"}, "text": "a } { \" [ string"}}]"#
        let output = signer.addingDownloadURLs(to: input)
        #expect(withoutURLs(output) == unmarked(input))
        #expect(!output.contains(AssetMarker.prefix))
        #expect(output.contains(#""contentType": "image/png","downloadURL":"https://canopy.example/assets/\#(Self.digest)?type=image/png&expires="#), "\(output)")
        #expect(output.contains(#""d1": 1.0"#))
    }

    @Test("escaped content types are read decoded; lists of assets, nested objects and non-assets are handled")
    func shapes() throws {
        let input = #"{"pages": [{"type": "ASSET", "sha256": "\#(Self.marked)", "contentType": "text\/plain; charset=\"utf-8\""}, {"type": "ASSET", "sha256": "\#(Self.marked)"}], "# +
            #""fake": {"type": "ASSET", "sha256": "\#(AssetMarker.prefix)not-a-digest"}, "other": {"type": "STRING", "nested": {"type": "ASSET"}}, "list": ["ASSET", {"a": []}]}"#
        let output = signer.addingDownloadURLs(to: input)
        #expect(withoutURLs(output) == unmarked(input))
        #expect(output.components(separatedBy: "downloadURL").count == 3, "\(output)")
        #expect(output.contains("?type=application/octet-stream&"), "\(output)")
        let parsed = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
        let pages = parsed?["pages"] as? [[String: Any]] ?? []
        let url = try #require(pages.first?["downloadURL"] as? String)
        let query = URLComponents(string: url)?.queryItems ?? []
        func value(_ name: String) -> String? { query.first { $0.name == name }?.value }
        #expect(value("type") == #"text/plain; charset="utf-8""#)
        #expect(signer.verify(sha256: Self.digest, contentType: value("type") ?? "", expires: Int64(value("expires") ?? "") ?? 0,
                              signature: value("signature") ?? ""))
    }

    @Test("look-alikes the database did not mark are never signed: GraphQL's stored form, CloudKit's dictionary, a record's own fields")
    func lookAlikesUnsigned() {
        let inputs = [
            // A record whose plain STRING fields are named type, sha256 and contentType.
            #"{"fields": {"type": "ASSET", "sha256": "\#(Self.digest)", "contentType": "image/png"}}"#,
            // Aliases that shape any object (issue 64's attack).
            #"{"records": [{"type": "ASSET", "sha256": "\#(Self.digest)"}]}"#,
            // CloudKit Web Services' asset dictionary, unmarked.
            #"{"records": [{"fields": {"photo": {"value": {"fileChecksum": "\#(Self.digest)", "size": 1}, "type": "ASSETID"}}}]}"#,
            #"{"fields": {"fileChecksum": "\#(Self.digest)"}}"#,
        ]
        for input in inputs {
            #expect(signer.addingDownloadURLs(to: input) == input)
            #expect(!AssetURLSigner.mayHoldAssets(input))
        }
    }

    @Test("a CloudKit Web Services asset dictionary the database marked is signed")
    func cloudKitDictionary() {
        let input = #"{"records":[{"fields":{"photo":{"value":{"fileChecksum":"\#(Self.marked)","size":3,"contentType":"image/png"},"type":"ASSETID"}}}]}"#
        let output = signer.addingDownloadURLs(to: input)
        #expect(withoutURLs(output) == unmarked(input))
        #expect(output.contains(#""contentType":"image/png","downloadURL":"https://canopy.example/assets/\#(Self.digest)?type=image/png&"#), "\(output)")
    }

    @Test("without an asset store, marks are removed and nothing is signed")
    func marksRemoved() {
        let input = #"{"photo": {"type": "ASSET", "sha256": "\#(Self.marked)"}}"#
        #expect(AssetURLSigner.removingMarks(from: input) == unmarked(input))
    }

    @Test("an answer without an asset comes back unchanged")
    func untouched() {
        let input = #"{"a": [1, 2.50, {"type": "STRING"}], "b": "ASSET"}"#
        #expect(signer.addingDownloadURLs(to: input) == input)
    }
}

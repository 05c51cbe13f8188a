import CanopyAssets
import Crypto
import Foundation
import Testing

/// The download URL is written into PostgreSQL's text without a second
/// parse (issue 34): every byte but the insertion stays as it was.
@Suite("Signing download URLs into an answer")
struct AssetURLInsertionTests {
    let signer = AssetURLSigner(key: SymmetricKey(data: Data(repeating: 7, count: 32)), publicURL: "https://canopy.example", lifetime: 3600)
    static let digest = String(repeating: "ab", count: 32)

    /// `json` with each `{{URL:type}}` marker's object closed by the inserted URL removed, to compare with the input.
    func withoutURLs(_ json: String) -> String {
        json.replacingOccurrences(of: #","downloadURL":"[^"]*""#, with: "", options: .regularExpression)
    }

    @Test("an asset value gets a URL before its closing brace; numbers, spacing and key order stay as PostgreSQL wrote them")
    func insertsInPlace() throws {
        let input = #"[{"recordName" : "a", "fields" : {"d1": 1.0, "small": 0.00000015, "photo": {"size": 7, "type": "ASSET", "sha256": "\#(Self.digest)", "contentType": "image/png"}, "text": "a } { \" [ string"}}]"#
        let output = signer.addingDownloadURLs(to: input)
        #expect(withoutURLs(output) == input)
        #expect(output.contains(#""contentType": "image/png","downloadURL":"https://canopy.example/assets/\#(Self.digest)?type=image/png&expires="#), "\(output)")
        #expect(output.contains(#""d1": 1.0"#))
    }

    @Test("escaped content types are read decoded; lists of assets, nested objects and non-assets are handled")
    func shapes() throws {
        let input = #"{"pages": [{"type": "ASSET", "sha256": "\#(Self.digest)", "contentType": "text\/plain; charset=\"utf-8\""}, {"type": "ASSET", "sha256": "\#(Self.digest)"}], "# +
            #""fake": {"type": "ASSET", "sha256": "not-a-digest"}, "other": {"type": "STRING", "nested": {"type": "ASSET"}}, "list": ["ASSET", {"a": []}]}"#
        let output = signer.addingDownloadURLs(to: input)
        #expect(withoutURLs(output) == input)
        #expect(output.components(separatedBy: "downloadURL").count == 3, "\(output)")
        #expect(output.contains("type=text/plain;%20charset%3D%22utf-8%22") || output.contains("type=text/plain"), "\(output)")
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

    @Test("an answer without an asset comes back unchanged")
    func untouched() {
        let input = #"{"a": [1, 2.50, {"type": "STRING"}], "b": "ASSET"}"#
        #expect(signer.addingDownloadURLs(to: input) == input)
    }
}

import CanopyAssets
import Crypto
import Foundation

/// Asset download URLs (docs/API.md §11) and their `Range` header: the input is
/// `PATH?QUERY\nRANGE`. The path's digest, the query's type, expires and
/// signature are read (with Foundation's URLComponents, standing in for
/// Hummingbird's query parser, which AssetController uses) and checked
/// with the signer; the range is parsed against a 20-byte body and must lie inside
/// it. And a URL the signer makes for any digest and content type verifies.
struct AssetURLTarget: FuzzTarget {
    static let name = "asset-url"
    static let signer = AssetURLSigner(key: SymmetricKey(data: Data(repeating: 3, count: 32)), publicURL: "https://canopy.example", lifetime: 3600)
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    func run(_ bytes: UnsafeRawBufferPointer) {
        let text = bytes.text
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let url = String(lines[0])
        if lines.count > 1 {
            let size: Int64 = 20
            switch ByteRange.parse(String(lines[1]), size: size) {
            case .part(let part):
                require(part.lowerBound >= 0 && part.upperBound <= size && !part.isEmpty, "range \(part) outside 0..<\(size) from \(lines[1])")
            case .whole, .unsatisfiable:
                break
            }
        }
        guard let components = URLComponents(string: "https://canopy.example\(url.hasPrefix("/") ? "" : "/")\(url)") else { return }
        let query = components.queryItems ?? []
        func value(_ name: String) -> String? { query.first { $0.name == name }?.value }
        let digestText = components.path.hasPrefix("/assets/") ? String(components.path.dropFirst(8)) : components.path
        if let digest = AssetDigest(hex: digestText), let type = value("type"), let expires = value("expires").flatMap(Int64.init),
           let signature = value("signature") {
            _ = Self.signer.verify(sha256: digest.hex, contentType: type, expires: expires, signature: signature, now: Self.now)
            // What the signer makes for this digest and type, read back the same way, verifies.
            let made = Self.signer.url(sha256: digest.hex, contentType: type, now: Self.now)
            let back = URLComponents(string: made)
            let items = back?.queryItems ?? []
            func madeValue(_ name: String) -> String? { items.first { $0.name == name }?.value }
            require(madeValue("type") == type, "the type \(type.debugDescription) does not survive its URL: \(made)")
            require(Self.signer.verify(sha256: digest.hex, contentType: madeValue("type") ?? "", expires: madeValue("expires").flatMap(Int64.init) ?? 0,
                                       signature: madeValue("signature") ?? "", now: Self.now),
                    "a URL the signer made does not verify: \(made)")
        }
    }

    func generatedSeeds() async throws -> [String: Data] {
        let digest = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        var seeds: [String: Data] = [:]
        for (index, (type, range)) in [("text/plain; charset=utf-8", "bytes=2-4"), ("image/svg+xml", "bytes=-3"), ("a&b=c d", "bytes=5-")].enumerated() {
            let url = Self.signer.url(sha256: digest, contentType: type, now: Self.now)
            let path = url.replacingOccurrences(of: "https://canopy.example", with: "")
            seeds["signed-\(index)"] = Data("\(path)\n\(range)".utf8)
        }
        return seeds
    }
}

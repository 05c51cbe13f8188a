import CanopyEncoding
import Foundation

/// Adds a signed `downloadURL` to every asset value of an answer in one
/// pass over PostgreSQL's JSON text, copying every other byte as it is, so
/// numbers keep their spelling (`1.0` stays a DOUBLE) and keys their order.
///
/// Only what the database typed as an asset, in a record's fields, gets a
/// URL (issue 64): the SQL that writes records' fields prefixes each stored
/// asset's digest with ``AssetMarker/prefix`` (sql/functions/asset_marks.sql),
/// and the scan signs exactly the objects whose `sha256` (GraphQL) or
/// `fileChecksum` (Web Services) member carries it, removing the prefix.
/// Nothing else an answer holds can carry the prefix, so no look-alike (a
/// record's STRING fields `type` and `sha256`, an alias, a field called
/// `fileChecksum`) is ever signed, whatever its shape.
extension AssetURLSigner {
    /// `json` with a `downloadURL` in every marked asset value and every
    /// mark removed; the same text when it holds none. Callers look with
    /// ``mayHoldAssets(_:)`` first (before fetching the signing key), so
    /// the scan does not look again.
    public func addingDownloadURLs(to json: String) -> String {
        Self.scanning(json) { sha256, contentType in
            url(sha256: sha256, contentType: contentType ?? "application/octet-stream")
        }
    }

    /// `json` with every asset mark removed and no URL added: for a
    /// gateway without an asset store, so no mark ever reaches a client.
    public static func removingMarks(from json: String) -> String {
        scanning(json) { _, _ in nil }
    }

    private static func scanning(_ json: String, _ url: (_ sha256: String, _ contentType: String?) -> String?) -> String {
        var json = json
        return json.withUTF8 { bytes in
            var scanner = AssetValueScanner(bytes)
            return scanner.signing(url)
        }
    }

    /// Whether `json` may hold a marked asset: a byte search for the
    /// mark, run on every answer, that lets all others through without
    /// parsing them or fetching the signing key.
    public static func mayHoldAssets(_ json: String) -> Bool {
        var json = json
        return json.withUTF8 { bytes in
            guard let base = bytes.baseAddress, bytes.count >= quotedMark.count else { return false }
            // memchr to each "~" (the mark's first byte, rare in JSON),
            // then the quote before it and the rest of the mark compared.
            let end = base + bytes.count
            var from = base + 1
            while from < end, let found = memchr(from, 0x7E, end - from) {
                let tilde = UnsafePointer(found.assumingMemoryBound(to: UInt8.self))
                if tilde - 1 + quotedMark.count <= end, (tilde - 1).pointee == 0x22,
                   memcmp(tilde - 1, quotedMark, quotedMark.count) == 0 {
                    return true
                }
                from = tilde + 1
            }
            return false
        }
    }

    /// The opening quote and the mark: how every marked digest starts.
    private static let quotedMark = Array("\"\(AssetMarker.prefix)".utf8)
}

/// The byte scanner behind ``AssetURLSigner/addingDownloadURLs(to:)``.
struct AssetValueScanner {
    /// What is known of one open object or array.
    private struct Frame {
        var isObject: Bool
        var key: String?
        /// The digest, from a member whose value carried the mark.
        var sha256: String?
        var contentType: String?
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var output: [UInt8] = []
    private var frames: [Frame] = []
    /// In an object, whether the next string is a key.
    private var expectingKey = false
    private let mark = AssetMarker.prefix

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func signing(_ url: (_ sha256: String, _ contentType: String?) -> String?) -> String {
        output.reserveCapacity(bytes.count + 512)
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let start = index
                let text = readString()
                if let digest = note(text) {
                    // The marked digest, written without its mark.
                    output.append(UInt8(ascii: "\""))
                    output.append(contentsOf: digest.utf8)
                    output.append(UInt8(ascii: "\""))
                } else {
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                }
                continue
            case UInt8(ascii: "{"):
                frames.append(Frame(isObject: true))
                expectingKey = true
            case UInt8(ascii: "["):
                frames.append(Frame(isObject: false))
                expectingKey = false
            case UInt8(ascii: "}"):
                if let frame = frames.popLast(), let sha256 = frame.sha256, AssetDigest(hex: sha256) != nil,
                   let signed = url(sha256, frame.contentType) {
                    output.append(contentsOf: #","downloadURL":"#.utf8)
                    output.append(contentsOf: JSONString.quoted(signed).utf8)
                }
                afterValue()
            case UInt8(ascii: "]"):
                _ = frames.popLast()
                afterValue()
            case UInt8(ascii: ","):
                expectingKey = frames.last?.isObject == true
            case UInt8(ascii: ":"):
                expectingKey = false
            default:
                break
            }
            output.append(byte)
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// A string just read: an object's key, or a member's value. Returns
    /// the digest when the value is a marked one (to be written unmarked).
    private mutating func note(_ text: String) -> String? {
        guard frames.last?.isObject == true else { return nil }
        if expectingKey {
            frames[frames.count - 1].key = text
            expectingKey = false
            return nil
        }
        defer { frames[frames.count - 1].key = nil }
        switch frames[frames.count - 1].key {
        // GraphQL's stored form names the digest sha256, CloudKit Web
        // Services' asset dictionary fileChecksum (sql/functions/cloudkit_records.sql).
        case "sha256", "fileChecksum":
            guard text.hasPrefix(mark) else { return nil }
            let digest = String(text.dropFirst(mark.count))
            frames[frames.count - 1].sha256 = digest
            return digest
        case "contentType":
            frames[frames.count - 1].contentType = text
            return nil
        default:
            return nil
        }
    }

    /// A closed object or array was a member's value.
    private mutating func afterValue() {
        expectingKey = false
        if frames.last?.isObject == true { frames[frames.count - 1].key = nil }
    }

    /// Reads the string at `index` (its opening quote) to just past its
    /// closing quote; returns its value, escapes decoded.
    private mutating func readString() -> String {
        index += 1
        let start = index
        var escaped = false
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            if bytes[index] == UInt8(ascii: "\\") {
                escaped = true
                index += 1
            }
            index += 1
        }
        let raw = UnsafeBufferPointer(rebasing: bytes[start..<min(index, bytes.count)])
        index = min(index + 1, bytes.count)
        return escaped ? Self.unescaped(raw) : String(decoding: raw, as: UTF8.self)
    }

    /// A JSON string's content with its escapes decoded.
    static func unescaped(_ raw: UnsafeBufferPointer<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        var bytes: [UInt8] = []
        var position = 0
        func flush() {
            scalars.append(contentsOf: String(decoding: bytes, as: UTF8.self).unicodeScalars)
            bytes.removeAll()
        }
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= raw.count else { return nil }
            return UInt32(String(decoding: UnsafeBufferPointer(rebasing: raw[at..<at + 4]), as: UTF8.self), radix: 16)
        }
        while position < raw.count {
            guard raw[position] == UInt8(ascii: "\\"), position + 1 < raw.count else {
                bytes.append(raw[position])
                position += 1
                continue
            }
            flush()
            let escape = raw[position + 1]
            position += 2
            switch escape {
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                guard var value = hex4(position) else { continue }
                position += 4
                if (0xD800..<0xDC00).contains(value), position + 6 <= raw.count, raw[position] == UInt8(ascii: "\\"),
                   raw[position + 1] == UInt8(ascii: "u"), let low = hex4(position + 2), (0xDC00..<0xE000).contains(low) {
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    position += 6
                }
                scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
            default: scalars.append(Unicode.Scalar(escape))
            }
        }
        flush()
        return String(scalars)
    }
}

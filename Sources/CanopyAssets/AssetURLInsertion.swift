import CanopyEncoding

/// Adds a signed `downloadURL` to every asset value of an answer in one
/// pass over PostgreSQL's JSON text, copying every other byte as it is, so
/// numbers keep their spelling (`1.0` stays a DOUBLE) and keys their order.
/// The text is trusted to be JSON (PostgreSQL wrote it); the scan only
/// keeps track of strings, nesting and, per object, its `type`, `sha256`
/// and `contentType` members, and writes `,"downloadURL":"…"` before the
/// closing brace of an object whose `type` is `ASSET` with a valid digest,
/// or that is CloudKit's asset dictionary (its digest in `fileChecksum`).
extension AssetURLSigner {
    /// `json` with a `downloadURL` in every asset value; unchanged when it holds none.
    public func addingDownloadURLs(to json: String) -> String {
        guard Self.mayHoldAssets(json) || Self.mayHoldCloudKitAssets(json) else { return json }
        var json = json
        return json.withUTF8 { bytes in
            var scanner = AssetValueScanner(bytes)
            return scanner.signing { sha256, contentType in
                url(sha256: sha256, contentType: contentType ?? "application/octet-stream")
            }
        }
    }
}

/// The byte scanner behind ``AssetURLSigner/addingDownloadURLs(to:)``.
struct AssetValueScanner {
    /// What is known of one open object or array.
    private struct Frame {
        var isObject: Bool
        var key: String?
        var type: String?
        var sha256: String?
        var contentType: String?
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var output: [UInt8] = []
    private var frames: [Frame] = []
    /// In an object, whether the next string is a key.
    private var expectingKey = false

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func signing(_ url: (_ sha256: String, _ contentType: String?) -> String) -> String {
        output.reserveCapacity(bytes.count + 512)
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let start = index
                let text = readString()
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                note(text)
                continue
            case UInt8(ascii: "{"):
                frames.append(Frame(isObject: true))
                expectingKey = true
            case UInt8(ascii: "["):
                frames.append(Frame(isObject: false))
                expectingKey = false
            case UInt8(ascii: "}"):
                if let frame = frames.popLast(), frame.type == "ASSET", let sha256 = frame.sha256, AssetDigest(hex: sha256) != nil {
                    output.append(contentsOf: #","downloadURL":"#.utf8)
                    output.append(contentsOf: JSONString.quoted(url(sha256, frame.contentType)).utf8)
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

    /// A string just read: an object's key, or a member's value.
    private mutating func note(_ text: String) {
        guard frames.last?.isObject == true else { return }
        if expectingKey {
            frames[frames.count - 1].key = text
            expectingKey = false
            return
        }
        switch frames[frames.count - 1].key {
        case "type": frames[frames.count - 1].type = text
        // CloudKit Web Services' asset dictionary names the digest fileChecksum
        // (sql/functions/cloudkit_records.sql writes it with contentType).
        case "sha256": frames[frames.count - 1].sha256 = text
        case "fileChecksum":
            frames[frames.count - 1].sha256 = text
            frames[frames.count - 1].type = "ASSET"
        case "contentType": frames[frames.count - 1].contentType = text
        default: break
        }
        frames[frames.count - 1].key = nil
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

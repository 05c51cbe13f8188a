import CanopyPlanner

/// JSON text PostgreSQL wrote, read without building it: objects as their
/// members' keys and value ranges, arrays as their elements' ranges, so a
/// writer can copy values' bytes as they are. The text is trusted to be
/// valid JSON (the gateway's own answer, as `AssetURLInsertion` trusts it);
/// a malformed one yields fewer members, never a crash.
struct RawJSON {
    let bytes: [UInt8]

    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    var whole: Range<Int> { skipSpace(0)..<bytes.count }

    func skipSpace(_ index: Int) -> Int {
        var index = index
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
        return index
    }

    /// The index just past the value starting at `start`: one pass over its
    /// bytes, strings skipped by their quotes and escapes.
    func end(of start: Int) -> Int {
        bytes.withUnsafeBufferPointer { buffer in
            let count = buffer.count
            guard start < count else { return count }
            var index = start
            var depth = 0
            repeat {
                switch buffer[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    while index < count {
                        let byte = buffer[index]
                        if byte == UInt8(ascii: "\\") { index += 2; continue }
                        index += 1
                        if byte == UInt8(ascii: "\"") { break }
                    }
                    if depth == 0 { return min(index, count) }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return index }   // the end of a scalar, inside its container
                    depth -= 1
                    if depth == 0 { return index + 1 }
                case UInt8(ascii: ","), 0x20, 0x0A, 0x0D, 0x09:
                    if depth == 0 { return index }
                default:
                    break
                }
                index += 1
            } while index < count
            return count
        }
    }

    /// A member of an object: its key's range (quotes included) and its value's.
    struct Member {
        var key: Range<Int>
        var value: Range<Int>
    }

    /// An object's members, in order.
    func members(_ range: Range<Int>) -> [Member] {
        guard range.lowerBound < bytes.count, bytes[range.lowerBound] == UInt8(ascii: "{") else { return [] }
        var members: [Member] = []
        members.reserveCapacity(8)
        var index = skipSpace(range.lowerBound + 1)
        while index < range.upperBound, bytes[index] == UInt8(ascii: "\"") {
            let keyEnd = end(of: index)
            let key = index..<keyEnd
            index = skipSpace(keyEnd)
            guard index < range.upperBound, bytes[index] == UInt8(ascii: ":") else { break }
            let valueStart = skipSpace(index + 1)
            let valueEnd = end(of: valueStart)
            members.append(Member(key: key, value: valueStart..<valueEnd))
            index = skipSpace(valueEnd)
            guard index < range.upperBound, bytes[index] == UInt8(ascii: ",") else { break }
            index = skipSpace(index + 1)
        }
        return members
    }

    /// An array's elements' ranges.
    func elements(_ range: Range<Int>) -> [Range<Int>] {
        guard range.lowerBound < bytes.count, bytes[range.lowerBound] == UInt8(ascii: "[") else { return [] }
        var elements: [Range<Int>] = []
        var index = skipSpace(range.lowerBound + 1)
        while index < range.upperBound, bytes[index] != UInt8(ascii: "]") {
            let valueEnd = end(of: index)
            elements.append(index..<valueEnd)
            index = skipSpace(valueEnd)
            guard index < range.upperBound, bytes[index] == UInt8(ascii: ",") else { break }
            index = skipSpace(index + 1)
        }
        return elements
    }

    /// The value of the member whose key is `key` (a plain key, no escapes).
    func value(of key: StaticString, in members: [Member]) -> Range<Int>? {
        for member in members where member.key.count == key.utf8CodeUnitCount + 2 {
            var same = true
            key.withUTF8Buffer { wanted in
                for offset in 0..<wanted.count where bytes[member.key.lowerBound + 1 + offset] != wanted[offset] {
                    same = false
                    break
                }
            }
            if same { return member.value }
        }
        return nil
    }

    /// A member's key as a string (its characters, for a schema lookup).
    func key(_ member: Member) -> String {
        string(member.key) ?? ""
    }

    func first(_ range: Range<Int>) -> UInt8? {
        range.isEmpty ? nil : bytes[range.lowerBound]
    }

    func isNull(_ range: Range<Int>) -> Bool {
        first(range) == UInt8(ascii: "n")
    }

    /// A string value's characters, unescaped when it has escapes.
    func string(_ range: Range<Int>) -> String? {
        guard first(range) == UInt8(ascii: "\""), range.count >= 2 else { return nil }
        let inner = bytes[(range.lowerBound + 1)..<(range.upperBound - 1)]
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        return (try? JSONValue(parsing: String(decoding: bytes[range], as: UTF8.self)))?.stringValue
    }

    func text(_ range: Range<Int>) -> Substring {
        Substring(String(decoding: bytes[range], as: UTF8.self))
    }

    func append(_ range: Range<Int>, to output: inout [UInt8]) {
        output.append(contentsOf: bytes[range])
    }
}

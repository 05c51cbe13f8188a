import CanopyPlanner

/// JSON text PostgreSQL wrote, read once into a tape of its values (where
/// each starts and ends, its first child, its next sibling) and not built:
/// objects give their members' keys and values, arrays their elements, and
/// a writer copies values' bytes as they are. One pass over the bytes
/// whatever the nesting (`make bench` W10: a page of 100 records was walked
/// five times by range-based reading). The text is trusted to be valid
/// JSON (the gateway's own answer, as `AssetURLInsertion` trusts it); a
/// malformed one yields fewer values, never a crash.
struct RawJSON {
    let bytes: [UInt8]
    /// A value: its bytes, first child and next sibling (-1: none). An
    /// object's children alternate key, value.
    struct Node {
        var start: Int
        var end: Int
        var firstChild = -1
        var nextSibling = -1
    }

    private(set) var nodes: [Node] = []
    /// The top value's node (-1: none).
    private(set) var root = -1

    /// A member of an object: its key's range (quotes included) and its value's node.
    struct Member {
        var key: Range<Int>
        var value: Int
    }

    init(_ text: String) {
        bytes = Array(text.utf8)
        nodes.reserveCapacity(bytes.count / 8)
        bytes.withUnsafeBufferPointer { buffer in
            var index = skip(buffer, 0)
            if index < buffer.count { root = value(buffer, &index, depth: 0) }
        }
    }

    private func skip(_ buffer: UnsafeBufferPointer<UInt8>, _ index: Int) -> Int {
        var index = index
        while index < buffer.count, buffer[index] == 0x20 || buffer[index] == 0x0A || buffer[index] == 0x0D || buffer[index] == 0x09 {
            index += 1
        }
        return index
    }

    private mutating func node(_ start: Int) -> Int {
        nodes.append(Node(start: start, end: start))
        return nodes.count - 1
    }

    /// Reads the value at `index` (moved past it) into the tape; its node.
    private mutating func value(_ buffer: UnsafeBufferPointer<UInt8>, _ index: inout Int, depth: Int) -> Int {
        let count = buffer.count
        let node = node(index)
        switch buffer[index] {
        case UInt8(ascii: "\""):
            index += 1
            while index < count {
                let byte = buffer[index]
                index += 1
                if byte == UInt8(ascii: "\\") { index += 1; continue }
                if byte == UInt8(ascii: "\"") { break }
            }
            index = min(index, count)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = buffer[index] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index = skip(buffer, index + 1)
            var last = -1
            // Deeper than any answer nests: read as one opaque value from here.
            while index < count, buffer[index] != close, depth < 64 {
                let child = value(buffer, &index, depth: depth + 1)
                if last < 0 { nodes[node].firstChild = child } else { nodes[last].nextSibling = child }
                last = child
                index = skip(buffer, index)
                if index < count, buffer[index] == UInt8(ascii: ":") || buffer[index] == UInt8(ascii: ",") {
                    index = skip(buffer, index + 1)
                } else if index < count, buffer[index] != close {
                    break
                }
            }
            index = min(index + 1, count)
        default:
            while index < count {
                switch buffer[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"), 0x20, 0x0A, 0x0D, 0x09:
                    nodes[node].end = index
                    return node
                default:
                    index += 1
                }
            }
        }
        nodes[node].end = index
        return node
    }

    /// A node's bytes.
    func range(_ node: Int) -> Range<Int> {
        node < 0 ? 0..<0 : nodes[node].start..<nodes[node].end
    }

    /// An object's members, in order.
    func members(_ node: Int) -> [Member] {
        guard first(node) == UInt8(ascii: "{") else { return [] }
        var members: [Member] = []
        members.reserveCapacity(8)
        var child = nodes[node].firstChild
        while child >= 0 {
            let value = nodes[child].nextSibling
            guard value >= 0 else { break }
            members.append(Member(key: range(child), value: value))
            child = nodes[value].nextSibling
        }
        return members
    }

    /// An array's elements, in order.
    func elements(_ node: Int) -> [Int] {
        guard first(node) == UInt8(ascii: "[") else { return [] }
        var elements: [Int] = []
        var child = nodes[node].firstChild
        while child >= 0 {
            elements.append(child)
            child = nodes[child].nextSibling
        }
        return elements
    }

    /// The value of `object`'s member whose key is `key` (plain, no
    /// escapes), found along the sibling links: no array.
    func value(of key: StaticString, in object: Int) -> Int? {
        guard first(object) == UInt8(ascii: "{") else { return nil }
        var child = nodes[object].firstChild
        while child >= 0 {
            let value = nodes[child].nextSibling
            guard value >= 0 else { return nil }
            if isString(child, key) { return value }
            child = nodes[value].nextSibling
        }
        return nil
    }

    /// Calls `body` with each member of `object` (key range, value node), in order: no array.
    func forEachMember(of object: Int, _ body: (Range<Int>, Int) -> Void) {
        guard first(object) == UInt8(ascii: "{") else { return }
        var child = nodes[object].firstChild
        while child >= 0 {
            let value = nodes[child].nextSibling
            guard value >= 0 else { return }
            body(range(child), value)
            child = nodes[value].nextSibling
        }
    }

    /// Calls `body` with each element of `array`, in order: no array.
    func forEachElement(of array: Int, _ body: (Int) -> Void) {
        guard first(array) == UInt8(ascii: "[") else { return }
        var child = nodes[array].firstChild
        while child >= 0 {
            body(child)
            child = nodes[child].nextSibling
        }
    }

    /// The value of the member whose key is `key` (a plain key, no escapes).
    func value(of key: StaticString, in members: [Member]) -> Int? {
        key.withUTF8Buffer { wanted in
            for member in members where member.key.count == wanted.count + 2 {
                var same = true
                for offset in 0..<wanted.count where bytes[member.key.lowerBound + 1 + offset] != wanted[offset] {
                    same = false
                    break
                }
                if same { return member.value }
            }
            return nil
        }
    }

    /// Whether a node is the string `text` (plain, no escapes).
    func isString(_ node: Int, _ text: StaticString) -> Bool {
        let range = range(node)
        return text.withUTF8Buffer { wanted in
            guard range.count == wanted.count + 2, bytes[range.lowerBound] == UInt8(ascii: "\"") else { return false }
            for offset in 0..<wanted.count where bytes[range.lowerBound + 1 + offset] != wanted[offset] { return false }
            return true
        }
    }

    /// A member's key as a string (its characters, for a schema lookup).
    func key(_ member: Member) -> String {
        string(member.key) ?? ""
    }

    func first(_ node: Int) -> UInt8? {
        node < 0 || nodes[node].start >= nodes[node].end ? nil : bytes[nodes[node].start]
    }

    /// A string value's characters, unescaped when it has escapes.
    func string(_ node: Int) -> String? {
        string(range(node))
    }

    func string(_ range: Range<Int>) -> String? {
        guard range.count >= 2, bytes[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
        let inner = bytes[(range.lowerBound + 1)..<(range.upperBound - 1)]
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        return (try? JSONValue(parsing: String(decoding: bytes[range], as: UTF8.self)))?.stringValue
    }

    func text(_ node: Int) -> String {
        String(decoding: bytes[range(node)], as: UTF8.self)
    }

    func append(_ node: Int, to output: inout [UInt8]) {
        output.append(contentsOf: bytes[range(node)])
    }

    func append(_ range: Range<Int>, to output: inout [UInt8]) {
        output.append(contentsOf: bytes[range])
    }
}

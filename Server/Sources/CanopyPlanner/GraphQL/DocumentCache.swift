import Synchronization

/// A cache keyed by a document's text, bounded by entries and by the bytes
/// of what it keeps (issue 64): a key counted at its text's length plus the
/// value's weight. Documents over ``largestEntry`` are not kept at all, so
/// a client cannot fill memory with a few hundred 2 MiB documents that
/// differ in a comment (120 of them once grew the gateway by 534 MiB).
/// Emptied when full, as the caches it replaces were.
public final class DocumentCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entries: Sendable {
        var values: [Key: Value] = [:]
        var bytes = 0
    }

    private let entries = Mutex(Entries())
    let capacity: Int
    let byteCapacity: Int
    let largestEntry: Int

    /// - Parameters:
    ///   - capacity: entries at most
    ///   - byteCapacity: bytes of keys and values at most
    ///   - largestEntry: the bytes of the largest entry kept
    public init(capacity: Int, byteCapacity: Int, largestEntry: Int) {
        self.capacity = capacity
        self.byteCapacity = byteCapacity
        self.largestEntry = largestEntry
    }

    public subscript(key: Key) -> Value? {
        entries.withLock { $0.values[key] }
    }

    /// Keeps `value` when it weighs at most ``largestEntry`` (`bytes`: the
    /// key's text and the value together).
    public func keep(_ value: Value, for key: Key, bytes: Int) {
        guard bytes <= largestEntry else { return }
        entries.withLock { entries in
            if entries.values.count >= capacity || entries.bytes + bytes > byteCapacity {
                entries.values.removeAll(keepingCapacity: true)
                entries.bytes = 0
            }
            if entries.values.updateValue(value, forKey: key) == nil { entries.bytes += bytes }
        }
    }

    /// Entries and bytes kept now.
    public var usage: (entries: Int, bytes: Int) {
        entries.withLock { ($0.values.count, $0.bytes) }
    }
}

import Synchronization

/// Values remembered for a fixed time, so most requests need no round trip
/// for what they looked up a moment ago: bearer tokens (whose hash is still
/// compared on every request; a revoked or deleted token stops working
/// within the time to live) and sign-ins. Emptied whole when full, which is
/// cheaper than tracking age and only costs a few lookups again.
///
/// A lock rather than an actor (issue 51): every request looks a token up,
/// a Web Services request two, and an actor made each lookup a hop to the
/// actor's executor and back, which under load is a wait and a thread
/// crossing for a dictionary read.
final class ExpiringCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    let timeToLive: Duration
    let capacity: Int
    private let entries = Mutex<[Key: (value: Value, expires: ContinuousClock.Instant)]>([:])

    init(timeToLive: Duration, capacity: Int = 10_000) {
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    func value(for key: Key) -> Value? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard entry.expires > now else {
                entries[key] = nil
                return nil
            }
            return entry.value
        }
    }

    /// Forgets one key at once (a token revoked through this gateway).
    func remove(_ key: Key) {
        _ = entries.withLock { entries in entries.removeValue(forKey: key) }
    }

    func store(_ value: Value, for key: Key) {
        let expires = ContinuousClock.now + timeToLive
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll() }
            entries[key] = (value, expires)
        }
    }
}

/// Values remembered for a fixed time, so most requests need no round trip
/// for what they looked up a moment ago: bearer tokens (whose hash is still
/// compared on every request; a revoked or deleted token stops working
/// within the time to live) and sign-ins. Emptied whole when full, which is
/// cheaper than tracking age and only costs a few lookups again.
actor ExpiringCache<Key: Hashable & Sendable, Value: Sendable> {
    let timeToLive: Duration
    let capacity: Int
    private var entries: [Key: (value: Value, expires: ContinuousClock.Instant)] = [:]

    init(timeToLive: Duration, capacity: Int = 10_000) {
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    func value(for key: Key) -> Value? {
        guard let entry = entries[key] else { return nil }
        guard entry.expires > .now else {
            entries[key] = nil
            return nil
        }
        return entry.value
    }

    func store(_ value: Value, for key: Key) {
        if entries.count >= capacity { entries.removeAll() }
        entries[key] = (value, .now + timeToLive)
    }
}

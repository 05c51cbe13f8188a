import Synchronization

/// Token buckets by key (a user, a client address): each holds up to
/// `burst` requests and refills at `rate` a second. One lock and a little
/// arithmetic a request; buckets that have refilled are swept once a minute.
final class TokenBuckets<Key: Hashable & Sendable>: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct State {
        var buckets: [Key: Bucket] = [:]
        var swept = ContinuousClock.now
    }

    let rate: Double
    let burst: Int
    private let state = Mutex(State())

    init(rate: Double, burst: Int) {
        self.rate = rate
        self.burst = burst
    }

    /// How long until `key`'s bucket has a request to give (nil: it has
    /// one now), taking nothing.
    func wait(for key: Key, now: ContinuousClock.Instant = .now) -> Duration? {
        let rate = self.rate
        guard rate > 0 else { return nil }
        return state.withLock { state -> Duration? in
            guard let bucket = state.buckets[key] else { return nil }
            let tokens = now > bucket.updated ? bucket.tokens + (now - bucket.updated).inSeconds * rate : bucket.tokens
            return tokens >= 1 ? nil : .seconds((1 - tokens) / rate)
        }
    }

    /// Takes one request from `key`'s bucket: nil when allowed, else how
    /// long until the next one would be. A rate of 0 allows everything.
    func take(for key: Key, now: ContinuousClock.Instant = .now) -> Duration? {
        let rate = self.rate
        guard rate > 0 else { return nil }
        let capacity = Double(max(1, burst))
        return state.withLock { state -> Duration? in
            if now - state.swept > .seconds(60) {
                state.swept = now
                state.buckets = state.buckets.filter { $0.value.tokens + max(.zero, now - $0.value.updated).inSeconds * rate < capacity }
            }
            var bucket = state.buckets[key] ?? Bucket(tokens: capacity, updated: now)
            // Requests read the clock before they take the lock, so a later
            // one may hold an earlier instant: time never runs backward here.
            if now > bucket.updated {
                bucket.tokens = min(capacity, bucket.tokens + (now - bucket.updated).inSeconds * rate)
                bucket.updated = now
            }
            defer { state.buckets[key] = bucket }
            guard bucket.tokens >= 1 else {
                return .seconds((1 - bucket.tokens) / rate)
            }
            bucket.tokens -= 1
            return nil
        }
    }
}

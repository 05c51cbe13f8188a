import Synchronization

/// The per-user limits every route checks once it knows who is asking: a
/// token bucket of requests (`AbuseLimits.requestsPerSecond`, `burst`) and
/// a count of open subscriptions. One lock and a little arithmetic a
/// request; buckets that have refilled are swept once a minute.
final class UserLimits: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct State {
        var buckets: [Int64: Bucket] = [:]
        var subscriptions: [Int64: Int] = [:]
        var swept = ContinuousClock.now
    }

    let limits: AbuseLimits
    private let state = Mutex(State())

    init(_ limits: AbuseLimits) {
        self.limits = limits
    }

    /// Takes one request from `user`'s bucket: nil when allowed, else how
    /// long until the next one would be.
    func takeRequest(for user: Int64, now: ContinuousClock.Instant = .now) -> Duration? {
        let rate = limits.requestsPerSecond
        guard rate > 0 else { return nil }
        let capacity = Double(max(1, limits.burst))
        return state.withLock { state -> Duration? in
            if now - state.swept > .seconds(60) {
                state.swept = now
                state.buckets = state.buckets.filter { $0.value.tokens + max(.zero, now - $0.value.updated).inSeconds * rate < capacity }
            }
            var bucket = state.buckets[user] ?? Bucket(tokens: capacity, updated: now)
            // Requests read the clock before they take the lock, so a later
            // one may hold an earlier instant: time never runs backward here.
            if now > bucket.updated {
                bucket.tokens = min(capacity, bucket.tokens + (now - bucket.updated).inSeconds * rate)
                bucket.updated = now
            }
            defer { state.buckets[user] = bucket }
            guard bucket.tokens >= 1 else {
                return .seconds((1 - bucket.tokens) / rate)
            }
            bucket.tokens -= 1
            return nil
        }
    }

    /// The refusal for a request over the rate: LIMIT_EXCEEDED (HTTP 429),
    /// retry after whole seconds (at least one).
    func rateError(retryingIn wait: Duration) -> APIError {
        var error = APIError(.limitExceeded, "more than \(Self.format(limits.requestsPerSecond)) requests a second (burst \(limits.burst)) for this user; slow down",
                             status: .tooManyRequests)
        error.retryAfter = max(1, Int(wait.inSeconds.rounded(.up)))
        return error
    }

    /// Counts one more open subscription for `user`; false at the limit.
    func openSubscription(for user: Int64) -> Bool {
        state.withLock { state in
            let open = state.subscriptions[user, default: 0]
            guard open < limits.maximumSubscriptionsPerUser else { return false }
            state.subscriptions[user] = open + 1
            return true
        }
    }

    func closeSubscription(for user: Int64) {
        state.withLock { state in
            let open = state.subscriptions[user, default: 1] - 1
            state.subscriptions[user] = open > 0 ? open : nil
        }
    }

    private static func format(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(rate)
    }
}

extension Duration {
    /// In seconds, as a Double (for rates and flags).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

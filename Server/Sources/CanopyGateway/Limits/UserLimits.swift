import Synchronization

/// The per-user limits every route checks once it knows who is asking: a
/// token bucket of requests (`AbuseLimits.requestsPerSecond`, `burst`) and
/// a count of open subscriptions.
final class UserLimits: Sendable {
    let limits: AbuseLimits
    private let requests: TokenBuckets<Int64>
    private let subscriptions = Mutex([Int64: Int]())

    init(_ limits: AbuseLimits) {
        self.limits = limits
        requests = TokenBuckets(rate: limits.requestsPerSecond, burst: limits.burst)
    }

    /// Takes one request from `user`'s bucket: nil when allowed, else how
    /// long until the next one would be.
    func takeRequest(for user: Int64, now: ContinuousClock.Instant = .now) -> Duration? {
        requests.take(for: user, now: now)
    }

    /// The refusal for a request over the rate: LIMIT_EXCEEDED (HTTP 429),
    /// retry after whole seconds (at least one).
    func rateError(retryingIn wait: Duration) -> APIError {
        var error = APIError(.limitExceeded, "more than \(Self.requests(limits.requestsPerSecond)) a second (burst \(limits.burst)) for this user; slow down",
                             status: .tooManyRequests)
        error.retryAfter = max(1, Int(wait.inSeconds.rounded(.up)))
        return error
    }

    /// Counts one more open subscription for `user`; false at the limit.
    func openSubscription(for user: Int64) -> Bool {
        subscriptions.withLock { subscriptions in
            let open = subscriptions[user, default: 0]
            guard open < limits.maximumSubscriptionsPerUser else { return false }
            subscriptions[user] = open + 1
            return true
        }
    }

    func closeSubscription(for user: Int64) {
        subscriptions.withLock { subscriptions in
            let open = subscriptions[user, default: 1] - 1
            subscriptions[user] = open > 0 ? open : nil
        }
    }

    static func format(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(rate)
    }

    /// "1 request", "2 requests", "0.5 requests".
    static func requests(_ rate: Double) -> String {
        "\(format(rate)) request\(rate == 1 ? "" : "s")"
    }
}

extension Duration {
    /// In seconds, as a Double (for rates and flags).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

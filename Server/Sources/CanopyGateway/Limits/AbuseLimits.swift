/// The limits that keep one client from taking the gateway from everyone
/// else (issue 20; docs/RELIABILITY.md, "Abuse limits"). Each has a
/// `canopy serve` flag and an environment variable (`canopy serve --help`):
/// - `requestsPerSecond` / `burst` (`--rate-limit`, `CANOPY_RATE_LIMIT`,
///   default 50; `--rate-burst`, `CANOPY_RATE_BURST`, default 100): a token
///   bucket per user over HTTP requests and subscription starts; past it,
///   HTTP 429 `LIMIT_EXCEEDED` with `Retry-After`. A rate of 0 turns it off.
/// - `maximumQueryCost` (`--max-query-cost`, default 50,000): the most rows
///   one document may ask for (``QueryCost``); past it, 400 `LIMIT_EXCEEDED`
///   before anything runs
/// - `maximumHeaderSize` (`--max-header-size`, default 16 KiB): a request's
///   line and headers together; past it, 400 and the connection is closed
/// - `requestHeadTimeout` (`--request-head-timeout`, default 10 s): a new
///   connection's first request line and headers must arrive within it
///   (a slowloris client trickling header bytes is cut off)
/// - `idleTimeout` (`--idle-timeout`, default 60 s): a keep-alive connection
///   with no request part for this long is closed
/// - `maximumWebSocketFrame` (`--max-websocket-frame`, default 1 MiB): a
///   larger frame or message closes the socket (1009)
/// - `webSocketPingInterval` (`--websocket-ping-interval`, default 30 s):
///   the server pings every interval and closes a socket whose pong has not
///   come by the next one (1001)
/// - `webSocketInitialisationTimeout` (`--websocket-init-timeout`, default
///   10 s): a socket must send `connection_init` within it after the
///   upgrade, or it is closed (4408, as graphql-ws's
///   `connectionInitWaitTimeout`)
/// - `maximumSubscriptionsPerUser` (`--max-subscriptions-per-user`, default
///   100): live subscriptions one user holds over all their sockets to this
///   gateway; one more is an `error` message `LIMIT_EXCEEDED`
/// - `anonymousRequestsPerSecond` / `anonymousBurst`
///   (`--anonymous-rate-limit`, default 10; `--anonymous-rate-burst`,
///   default 20): requests without a token (the public database's reads,
///   issue 36), a bucket per client address; 429 past it
/// - `anonymousMaximumQueryCost` (`--anonymous-max-query-cost`, default
///   5,000): the cost limit for a request without a token
/// - `anonymousMaximumDocumentBytes` (64 KiB): the longest GraphQL document
///   a request without a token may send (issue 64; a signed-in caller's
///   is bounded by the 2 MiB body limit); past it, 413 `LIMIT_EXCEEDED`
///   before the document is parsed
/// - `introspection` (`--introspection`, `CANOPY_INTROSPECTION`: `open`,
///   the default, `signed-in` or `off`): who may read the schema through
///   `__schema` and `__type` (docs/SECURITY.md, "Introspection")
/// - `maximumIntrospectionCost` (`--max-introspection-cost`, default
///   20,000): the most values an introspection answer may hold
///   (``IntrospectionCost``; the standard introspection query of GraphQL
///   tools is between 5,000 and 6,000 here, a 76 KB answer); past it, 400 `LIMIT_EXCEEDED` before the
///   executor runs
/// - `trustsProxyHeader` (`--trust-proxy-header`, off): the client address
///   of a request without a token is the last address of its
///   `X-Forwarded-For` (as the proxy in front appended it), not the peer's
public struct AbuseLimits: Sendable {
    public var requestsPerSecond: Double
    public var burst: Int
    public var maximumQueryCost: Int
    public var maximumHeaderSize: Int
    public var requestHeadTimeout: Duration
    public var idleTimeout: Duration
    public var maximumWebSocketFrame: Int
    public var webSocketPingInterval: Duration
    public var webSocketInitialisationTimeout: Duration = .seconds(10)
    public var maximumSubscriptionsPerUser: Int
    public var anonymousRequestsPerSecond: Double = 10
    public var anonymousBurst: Int = 20
    public var anonymousMaximumQueryCost: Int = 5_000
    public var anonymousMaximumDocumentBytes: Int = 65_536
    public var trustsProxyHeader = false
    public var introspection: IntrospectionAccess = .open
    public var maximumIntrospectionCost = 20_000

    public init(
        requestsPerSecond: Double = 50, burst: Int = 100, maximumQueryCost: Int = 50_000,
        maximumHeaderSize: Int = 16 * 1024, requestHeadTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(60),
        maximumWebSocketFrame: Int = 1 << 20, webSocketPingInterval: Duration = .seconds(30), maximumSubscriptionsPerUser: Int = 100
    ) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
        self.maximumQueryCost = maximumQueryCost
        self.maximumHeaderSize = maximumHeaderSize
        self.requestHeadTimeout = requestHeadTimeout
        self.idleTimeout = idleTimeout
        self.maximumWebSocketFrame = maximumWebSocketFrame
        self.webSocketPingInterval = webSocketPingInterval
        self.maximumSubscriptionsPerUser = maximumSubscriptionsPerUser
    }
}

/// `--introspection`: who may read the schema through `__schema` and
/// `__type` (issue 48). Many GraphQL servers turn introspection off in
/// production; Canopy's schema is public (Server/schema/canopy.graphql), and GraphQL
/// tools and code generators read it, so it is open by default, within the
/// same limits as any other field.
public enum IntrospectionAccess: String, Sendable, CaseIterable {
    /// Anyone, with or without a token (the anonymous rate limit applies).
    case open
    /// Signed-in callers; without a token, 401 `NOT_AUTHENTICATED`.
    case signedIn = "signed-in"
    /// Nobody: 403 `PERMISSION_FAILURE` (`__typename` still answers).
    case off
}

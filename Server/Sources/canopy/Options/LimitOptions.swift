import ArgumentParser
import CanopyGateway
import Foundation

/// `canopy serve`'s abuse limits (docs/RELIABILITY.md, "Abuse limits"):
/// the per-user request rate, the query cost, and the limits on
/// connections, headers and WebSockets. Defaults are `AbuseLimits`'.
struct LimitOptions: ParsableArguments {
    private static let defaults = AbuseLimits()
    private static func environment(_ name: String) -> Double? {
        ProcessInfo.processInfo.environment[name].flatMap { Double($0) }
    }

    @Option(name: .customLong("rate-limit"), help: ArgumentHelp(
        "Requests a second each user may make on average, over /graphql, /assets and subscription starts; past it, HTTP 429 LIMIT_EXCEEDED with Retry-After (env CANOPY_RATE_LIMIT; 0 turns it off).",
        valueName: "per-second"))
    var rateLimit: Double = environment("CANOPY_RATE_LIMIT") ?? defaults.requestsPerSecond

    @Option(name: .customLong("rate-burst"), help: ArgumentHelp(
        "Requests a user may make at once before --rate-limit applies (env CANOPY_RATE_BURST).",
        valueName: "requests"))
    var rateBurst: Int = environment("CANOPY_RATE_BURST").map { Int($0) } ?? defaults.burst

    @Option(name: .customLong("max-query-cost"), help: ArgumentHelp(
        "The most rows one document may ask for (pages' limits times nested lists, summed over root fields); past it, HTTP 400 LIMIT_EXCEEDED before anything runs (env CANOPY_MAX_QUERY_COST).",
        valueName: "rows"))
    var maximumQueryCost: Int = environment("CANOPY_MAX_QUERY_COST").map { Int($0) } ?? defaults.maximumQueryCost

    @Option(name: .customLong("max-header-size"), help: ArgumentHelp(
        "Bytes of a request's line and headers together; past it, HTTP 400 and the connection is closed (env CANOPY_MAX_HEADER_SIZE).",
        valueName: "bytes"))
    var maximumHeaderSize: Int = environment("CANOPY_MAX_HEADER_SIZE").map { Int($0) } ?? defaults.maximumHeaderSize

    @Option(name: .customLong("request-head-timeout"), help: ArgumentHelp(
        "Seconds a new connection has to send its first request line and headers, or it is closed (a client trickling bytes holds nothing longer; env CANOPY_REQUEST_HEAD_TIMEOUT).",
        valueName: "seconds"))
    var requestHeadTimeout: Double = environment("CANOPY_REQUEST_HEAD_TIMEOUT") ?? defaults.requestHeadTimeout.inSeconds

    @Option(name: .customLong("idle-timeout"), help: ArgumentHelp(
        "Seconds a keep-alive connection may sit without a request before it is closed (env CANOPY_IDLE_TIMEOUT).",
        valueName: "seconds"))
    var idleTimeout: Double = environment("CANOPY_IDLE_TIMEOUT") ?? defaults.idleTimeout.inSeconds

    @Option(name: .customLong("max-websocket-frame"), help: ArgumentHelp(
        "Bytes of the largest WebSocket frame or message accepted; a larger one closes the socket with 1009 (env CANOPY_MAX_WEBSOCKET_FRAME).",
        valueName: "bytes"))
    var maximumWebSocketFrame: Int = environment("CANOPY_MAX_WEBSOCKET_FRAME").map { Int($0) } ?? defaults.maximumWebSocketFrame

    @Option(name: .customLong("websocket-ping-interval"), help: ArgumentHelp(
        "Seconds between the server's pings on a WebSocket; a socket whose pong has not come by the next ping is closed (env CANOPY_WEBSOCKET_PING_INTERVAL).",
        valueName: "seconds"))
    var webSocketPingInterval: Double = environment("CANOPY_WEBSOCKET_PING_INTERVAL") ?? defaults.webSocketPingInterval.inSeconds

    @Option(name: .customLong("websocket-init-timeout"), help: ArgumentHelp(
        "Seconds a new WebSocket has to send connection_init after the upgrade, or it is closed with 4408 (env CANOPY_WEBSOCKET_INIT_TIMEOUT).",
        valueName: "seconds"))
    var webSocketInitialisationTimeout: Double = environment("CANOPY_WEBSOCKET_INIT_TIMEOUT") ?? defaults.webSocketInitialisationTimeout.inSeconds

    @Option(name: .customLong("max-subscriptions-per-user"), help: ArgumentHelp(
        "Live subscriptions one user may hold over all their sockets to this server; one more is answered with an error message LIMIT_EXCEEDED (env CANOPY_MAX_SUBSCRIPTIONS_PER_USER).",
        valueName: "count"))
    var maximumSubscriptionsPerUser: Int = environment("CANOPY_MAX_SUBSCRIPTIONS_PER_USER").map { Int($0) } ?? defaults.maximumSubscriptionsPerUser

    @Option(name: .customLong("anonymous-rate-limit"), help: ArgumentHelp(
        "Requests a second each client address may make on average without a token (the public database's reads); past it, HTTP 429 LIMIT_EXCEEDED with Retry-After (env CANOPY_ANONYMOUS_RATE_LIMIT; 0 turns it off).",
        valueName: "per-second"))
    var anonymousRateLimit: Double = environment("CANOPY_ANONYMOUS_RATE_LIMIT") ?? defaults.anonymousRequestsPerSecond

    @Option(name: .customLong("anonymous-rate-burst"), help: ArgumentHelp(
        "Requests a client address may make at once without a token before --anonymous-rate-limit applies (env CANOPY_ANONYMOUS_RATE_BURST).",
        valueName: "requests"))
    var anonymousRateBurst: Int = environment("CANOPY_ANONYMOUS_RATE_BURST").map { Int($0) } ?? defaults.anonymousBurst

    @Option(name: .customLong("anonymous-max-query-cost"), help: ArgumentHelp(
        "--max-query-cost for a request without a token (env CANOPY_ANONYMOUS_MAX_QUERY_COST).",
        valueName: "rows"))
    var anonymousMaximumQueryCost: Int = environment("CANOPY_ANONYMOUS_MAX_QUERY_COST").map { Int($0) } ?? defaults.anonymousMaximumQueryCost

    @Flag(name: .customLong("trust-proxy-header"), help: ArgumentHelp(
        "Behind a reverse proxy: take a tokenless request's client address (for --anonymous-rate-limit) from the last address of X-Forwarded-For, which the proxy appends, instead of the connection's peer. Only with a proxy that sets it: otherwise any client picks its own address (env CANOPY_TRUST_PROXY_HEADER=1)."))
    var trustProxyHeader: Bool = ProcessInfo.processInfo.environment["CANOPY_TRUST_PROXY_HEADER"] == "1"

    @Option(name: .customLong("introspection"), help: ArgumentHelp(
        "Who may read the schema through __schema and __type: open (anyone, the default), signed-in (callers with a token; others get 401) or off (403 PERMISSION_FAILURE) (env CANOPY_INTROSPECTION).",
        valueName: "open|signed-in|off"))
    var introspection: String = ProcessInfo.processInfo.environment["CANOPY_INTROSPECTION"] ?? IntrospectionAccess.open.rawValue

    @Option(name: .customLong("max-introspection-cost"), help: ArgumentHelp(
        "The most values an introspection answer may hold, each list counted at its longest in the schema; past it, HTTP 400 LIMIT_EXCEEDED before anything runs (env CANOPY_MAX_INTROSPECTION_COST).",
        valueName: "values"))
    var maximumIntrospectionCost: Int = environment("CANOPY_MAX_INTROSPECTION_COST").map { Int($0) } ?? defaults.maximumIntrospectionCost

    func validate() throws {
        guard IntrospectionAccess(rawValue: introspection) != nil else {
            throw ValidationError("--introspection must be open, signed-in or off, got \(introspection)")
        }
        guard maximumIntrospectionCost >= 1 else { throw ValidationError("--max-introspection-cost must be at least 1, got \(maximumIntrospectionCost)") }
        guard rateLimit >= 0, rateLimit.isFinite else { throw ValidationError("--rate-limit must be 0 (off) or more requests a second, got \(rateLimit)") }
        guard rateBurst >= 1 else { throw ValidationError("--rate-burst must be at least 1, got \(rateBurst)") }
        guard maximumQueryCost >= 1 else { throw ValidationError("--max-query-cost must be at least 1, got \(maximumQueryCost)") }
        guard maximumHeaderSize >= 1024 else { throw ValidationError("--max-header-size must be at least 1024 bytes, got \(maximumHeaderSize)") }
        for (flag, seconds) in [("--request-head-timeout", requestHeadTimeout), ("--idle-timeout", idleTimeout), ("--websocket-ping-interval", webSocketPingInterval),
                               ("--websocket-init-timeout", webSocketInitialisationTimeout)] {
            guard seconds > 0, seconds.isFinite else { throw ValidationError("\(flag) must be a positive number of seconds, got \(seconds)") }
        }
        guard maximumWebSocketFrame >= 1024 else { throw ValidationError("--max-websocket-frame must be at least 1024 bytes, got \(maximumWebSocketFrame)") }
        guard maximumSubscriptionsPerUser >= 1 else { throw ValidationError("--max-subscriptions-per-user must be at least 1, got \(maximumSubscriptionsPerUser)") }
        guard anonymousRateLimit >= 0, anonymousRateLimit.isFinite else { throw ValidationError("--anonymous-rate-limit must be 0 (off) or more requests a second, got \(anonymousRateLimit)") }
        guard anonymousRateBurst >= 1 else { throw ValidationError("--anonymous-rate-burst must be at least 1, got \(anonymousRateBurst)") }
        guard anonymousMaximumQueryCost >= 1 else { throw ValidationError("--anonymous-max-query-cost must be at least 1, got \(anonymousMaximumQueryCost)") }
    }

    var limits: AbuseLimits {
        var limits = AbuseLimits(
            requestsPerSecond: rateLimit, burst: rateBurst, maximumQueryCost: maximumQueryCost,
            maximumHeaderSize: maximumHeaderSize, requestHeadTimeout: .seconds(requestHeadTimeout), idleTimeout: .seconds(idleTimeout),
            maximumWebSocketFrame: maximumWebSocketFrame, webSocketPingInterval: .seconds(webSocketPingInterval),
            maximumSubscriptionsPerUser: maximumSubscriptionsPerUser
        )
        limits.webSocketInitialisationTimeout = .seconds(webSocketInitialisationTimeout)
        limits.anonymousRequestsPerSecond = anonymousRateLimit
        limits.anonymousBurst = anonymousRateBurst
        limits.anonymousMaximumQueryCost = anonymousMaximumQueryCost
        limits.trustsProxyHeader = trustProxyHeader
        limits.introspection = IntrospectionAccess(rawValue: introspection) ?? .open
        limits.maximumIntrospectionCost = maximumIntrospectionCost
        return limits
    }
}

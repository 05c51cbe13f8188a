import CanopyIdentity
import CanopyOutbound
import CanopyPush
/// How the gateway serves. Keys and the CLI flags / environment variables
/// that set them (see `canopy serve --help`):
/// - `host` (`--host`, `CANOPY_HOST`, default 127.0.0.1)
/// - `port` (`--port`, `CANOPY_PORT`, default 8080)
/// - `publicURL` (`--public-url`, `CANOPY_PUBLIC_URL`): base of share URLs;
///   when it is https, every answer carries `Strict-Transport-Security`
/// - `maximumBodySize`: request bodies above it are HTTP 413 (default 2 MiB)
/// - `statementTimeout`: per-request `statement_timeout` (default 10 s)
/// - `documentLimits`: GraphQL depth and alias limits
/// - `changeRetention` (`--change-retention-days`, `CANOPY_CHANGE_RETENTION_DAYS`,
///   default 30 days): how long tombstones and zone departures are kept;
///   older change tokens are CHANGE_TOKEN_EXPIRED
/// - `shareActivityRetention` (`--share-activity-retention-days`,
///   `CANOPY_SHARE_ACTIVITY_RETENTION_DAYS`, default 90 days): how long a
///   deleted share's activity log is kept
/// - `purgeInterval`: how often that history is purged (default hourly)
/// - `accessLog` (`--access-log`, `CANOPY_ACCESS_LOG=1`): a log line per
///   request at info (off by default: a synchronous write on every
///   request's path; errors and slow requests are logged either way)
/// - `crossOrigin` (`--cors-origin`, repeatable; `CANOPY_CORS_ORIGINS`,
///   comma-separated): the browser origins allowed to call (none by default)
/// - `assets` (`--asset-dir`, `CANOPY_ASSET_DIR`, default `<data dir>/assets`;
///   `--max-asset-size`, `CANOPY_MAX_ASSET_SIZE`, default 50 MiB): where
///   `POST /assets` keeps uploads; nil: no `/assets` route
/// - `console` (`--web-dir`, `CANOPY_WEB_DIR`, default `web` beside the
///   migrations directory; `--no-console`): the web console's files,
///   served at `/` and `/console/`; nil: no console (the invitation page
///   at `/share/<token>` is served either way)
/// - `clientPackage` (`--js-dir`, `CANOPY_JS_DIR`, default `clients/js`
///   beside the migrations directory): CanopyJS's modules, served at `/js/`
///   with the console, which is built on them; nil: not served
/// - `signInProviders`: the `--auth-config` providers with a `signIn` block,
///   offered by the console as "Sign in with …" buttons
/// - `webServices` (`--container`, `CANOPY_CONTAINER`; `--environment`,
///   `CANOPY_ENVIRONMENT`, default production): the CloudKit container
///   whose Web Services API (`/database/1/…`) this server answers; nil:
///   none (docs/WEB_SERVICES.md)
/// - `limits`: rates, sizes and timeouts that keep one client from taking
///   the gateway from others (``AbuseLimits`` lists each with its flag)
public struct GatewayConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var publicURL: String
    public var maximumBodySize: Int
    public var statementTimeout: Duration
    public var maximumDepth: Int
    public var maximumAliases: Int
    public var changeRetention: Duration
    public var shareActivityRetention: Duration
    public var purgeInterval: Duration
    public var crossOrigin: CrossOriginPolicy
    public var accessLog: Bool
    public var assets: AssetSettings?
    public var console: ConsoleFiles?
    public var clientPackage: ConsoleFiles?
    /// Serve the console over plain HTTP to clients beyond this machine
    /// (`--console-over-http`); by default only loopback clients get it
    /// unless the public URL is https.
    public var consoleOverPlainHTTP = false
    public var signInProviders: [IdentityProvider]
    public var limits: AbuseLimits
    public var push: PushSettings?
    /// Which user-supplied URLs (webhooks, Web Push endpoints) may be
    /// registered and called: public https on port 443 unless the operator
    /// allows more (`--outbound-allow`, `--outbound-ports`).
    public var outbound: OutboundPolicy
    /// The container and environment CloudKit Web Services requests name
    /// (`canopy serve --container`); nil: `/database/1/…` is not served.
    public var webServices: WebServicesSettings?
    /// How many planned statements the plan cache keeps (`--plan-cache-size`;
    /// 0 turns it off), and whether each hit is checked against a plan made
    /// anew (`CANOPY_PLAN_CACHE_VERIFY=1`: a difference is logged and
    /// answered from the new plan; the tests' gateways fail the request).
    public var planCacheSize = 1024
    public var planCacheVerification = PlanCacheVerification.off
    /// The plan cache to use (a test reads its statistics); nil: one of
    /// ``planCacheSize`` made with the application.
    public var planCache: PlanCache?

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        publicURL: String? = nil,
        maximumBodySize: Int = 2 * 1024 * 1024,
        statementTimeout: Duration = .seconds(10),
        maximumDepth: Int = 12,
        maximumAliases: Int = 30,
        changeRetention: Duration = .seconds(30 * 24 * 3600),
        shareActivityRetention: Duration = .seconds(90 * 24 * 3600),
        purgeInterval: Duration = .seconds(3600),
        crossOrigin: CrossOriginPolicy = .none,
        accessLog: Bool = false,
        assets: AssetSettings? = nil,
        console: ConsoleFiles? = nil,
        clientPackage: ConsoleFiles? = nil,
        signInProviders: [IdentityProvider] = [],
        limits: AbuseLimits = AbuseLimits(),
        push: PushSettings? = nil,
        outbound: OutboundPolicy = OutboundPolicy(),
        webServices: WebServicesSettings? = nil
    ) {
        self.outbound = outbound
        self.webServices = webServices
        self.host = host
        self.port = port
        self.publicURL = publicURL ?? "http://\(host):\(port)"
        self.maximumBodySize = maximumBodySize
        self.statementTimeout = statementTimeout
        self.maximumDepth = maximumDepth
        self.maximumAliases = maximumAliases
        self.changeRetention = changeRetention
        self.shareActivityRetention = shareActivityRetention
        self.purgeInterval = purgeInterval
        self.crossOrigin = crossOrigin
        self.accessLog = accessLog
        self.assets = assets
        self.console = console
        self.clientPackage = clientPackage
        self.signInProviders = signInProviders.filter { $0.signIn != nil }
        self.limits = limits
        self.push = push
    }
}

/// Whether the plan cache checks each hit against a plan made anew.
public enum PlanCacheVerification: Sendable {
    case off
    /// Logged and counted; the request is answered from the new plan.
    case compare
    /// The request fails with INTERNAL_ERROR (tests).
    case strict
}

import CanopyAssets
import CanopyIdentity
import CanopyOutbound
import CanopyPlanner
import CanopyPush
import CanopyRequestStore
import Crypto
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// Builds the gateway: the same function `canopy serve` and the tests use.
/// The database pool runs as one of the application's services, so it
/// starts before the server and stops after it.
///
/// - Parameter identity: verifies identity-provider tokens (`--auth-config`);
///   without it only Canopy tokens authenticate.
public func buildApplication(
    configuration: GatewayConfiguration,
    database: RequestDatabase,
    identity: TokenVerifier? = nil,
    logger: Logger,
    metricsRegistry: PrometheusCollectorRegistry? = nil
) -> some ApplicationProtocol {
    let authenticator = Authenticator(
        database: database, verifier: identity, limits: UserLimits(configuration.limits), anonymous: AnonymousAccess(configuration.limits)
    )
    let recordSchemas = RecordSchemas(
        database: database,
        plans: configuration.planCache ?? PlanCache(capacity: configuration.planCacheSize, verification: configuration.planCacheVerification),
        maximumAge: min(.milliseconds(500), database.schemaCacheTime)
    )
    var assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?
    if let assets = configuration.assets {
        let publicURL = configuration.publicURL
        let lifetime = assets.downloadLifetime
        assetURLs = { @Sendable logger in
            let keys = try await database.secrets.keys("asset-url", logger: logger)
            return AssetURLSigner(key: SymmetricKey(data: keys.current), acceptedKeys: keys.accepted.map { SymmetricKey(data: $0) },
                                  publicURL: publicURL, lifetime: lifetime)
        }
    }
    let router = Router(context: CanopyRequestContext.self)
    router.add(middleware: CrossOriginMiddleware(policy: configuration.crossOrigin))
    router.add(middleware: RequestIDMiddleware())
    if database.engine == .citus {
        router.add(middleware: OwnerRoutingMiddleware())
    }
    if let tracing = database.tracing {
        router.add(middleware: RequestTracingMiddleware(tracing: tracing, deadlines: database.primary.deadlines))
    }
    router.add(middleware: TransportHeadersMiddleware(publicURL: configuration.publicURL))
    if configuration.accessLog {
        router.add(middleware: AccessLogMiddleware(logLevel: .info))
    }
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: GraphQLMediaTypeMiddleware())
    HealthController(database: database).register(on: router)
    GraphQLController(
        database: database, configuration: configuration, authenticator: authenticator, recordSchemas: recordSchemas, assetURLs: assetURLs
    ).register(on: router)
    InvitationPageController(database: database, configuration: configuration).register(on: router)
    SignInProvidersController(providers: configuration.signInProviders).register(on: router)
    if let webServices = configuration.webServices {
        WebServicesController(
            settings: webServices, database: database, configuration: configuration, authenticator: authenticator,
            recordSchemas: recordSchemas, assetURLs: assetURLs
        ).register(on: router)
    }
    if let console = configuration.console {
        let transport = ConsoleTransport(publicURL: configuration.publicURL, plainHTTPAllowed: configuration.consoleOverPlainHTTP)
        ConsoleController(files: console, transport: transport).register(on: router)
    }
    if let clientPackage = configuration.clientPackage {
        ClientPackageController(files: clientPackage).register(on: router)
    }
    if let assets = configuration.assets, let assetURLs {
        AssetController(database: database, settings: assets, authenticator: authenticator, signer: assetURLs).register(on: router)
    }
    if let metricsRegistry {
        router.get("metrics") { _, context -> Response in
            await StorageMetrics.refresh(from: database, logger: context.logger)
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metricsRegistry.emitToBuffer()))
            )
        }
    }
    // WebSocket upgrades of /graphql (subscriptions) have a router of their own.
    let webSocketRouter = Router(context: CanopyRequestContext.self)
    webSocketRouter.add(middleware: RequestIDMiddleware())
    SubscriptionController(database: database, configuration: configuration, authenticator: authenticator, recordSchemas: recordSchemas)
        .register(on: webSocketRouter)
    var services: [any Service] = [
        database.primary, database.notifier,
        ChangeHistoryPurger(
            primary: database.primary, retention: configuration.changeRetention,
            shareActivityRetention: configuration.shareActivityRetention, interval: configuration.purgeInterval, logger: logger
        ),
    ] + (database.replicas.map { [$0] } ?? [])
    if let push = configuration.push {
        services.append(PushDeliverer(database: database, settings: push, outbound: configuration.outbound, schema: { recordType, logger in
            try await recordSchemas.schema(of: recordType, refresh: false, logger: logger)
        }, logger: logger))
    }
    return Application(
        router: router,
        server: server(webSocketRouter: webSocketRouter, limits: configuration.limits, loops: database.servingLoops),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "canopy"),
        services: services,
        logger: logger
    )
}

/// HTTP/1 with WebSocket upgrades, under the connection limits: header
/// size, the first head's deadline, the idle timeout, frame size and pings.
private func server(webSocketRouter: Router<CanopyRequestContext>, limits: AbuseLimits, loops: ServingLoops?) -> HTTPServerBuilder {
    let webSocketResponder = webSocketRouter.buildResponder()
    let http1 = HTTP1Channel.Configuration(
        idleTimeout: TimeAmount(limits.idleTimeout),
        httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.maximumHeaderSize, maxHeaderListSize: limits.maximumHeaderSize)
    )
    let ws = WebSocketServerConfiguration(maxFrameSize: limits.maximumWebSocketFrame, autoPing: .enabled(timePeriod: limits.webSocketPingInterval))
    return HTTPServerBuilder { responder in
        HeadDeadlineChannel(
            base: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: .init(http1: http1, ws: ws)),
            headTimeout: TimeAmount(limits.requestHeadTimeout), loops: loops
        )
    }
}

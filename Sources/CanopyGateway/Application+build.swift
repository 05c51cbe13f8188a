import CanopyIdentity
import Crypto
import CanopyStore
import Hummingbird
import HummingbirdWebSocket
import Logging
import Prometheus

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
    let authenticator = Authenticator(database: database, verifier: identity)
    var assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?
    if let assets = configuration.assets {
        let publicURL = configuration.publicURL
        let lifetime = assets.downloadLifetime
        assetURLs = { @Sendable logger in
            let key = try await database.secrets.key("asset-url", logger: logger)
            return AssetURLSigner(key: SymmetricKey(data: key), publicURL: publicURL, lifetime: lifetime)
        }
    }
    let router = Router(context: CanopyRequestContext.self)
    router.add(middleware: CrossOriginMiddleware(policy: configuration.crossOrigin))
    router.add(middleware: RequestIDMiddleware())
    if configuration.accessLog {
        router.add(middleware: LogRequestsMiddleware(.info))
    }
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: GraphQLMediaTypeMiddleware())
    HealthController(database: database).register(on: router)
    GraphQLController(database: database, configuration: configuration, authenticator: authenticator, assetURLs: assetURLs).register(on: router)
    InvitationPageController(database: database, configuration: configuration).register(on: router)
    if let console = configuration.console {
        ConsoleController(files: console, providers: configuration.signInProviders).register(on: router)
    }
    if let assets = configuration.assets, let assetURLs {
        AssetController(database: database, settings: assets, authenticator: authenticator, signer: assetURLs).register(on: router)
    }
    if let metricsRegistry {
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metricsRegistry.emitToBuffer()))
            )
        }
    }
    // WebSocket upgrades of /graphql (subscriptions) have a router of their own.
    let webSocketRouter = Router(context: CanopyRequestContext.self)
    webSocketRouter.add(middleware: RequestIDMiddleware())
    SubscriptionController(database: database, configuration: configuration, authenticator: authenticator).register(on: webSocketRouter)
    return Application(
        router: router,
        server: .http1WebSocketUpgrade(webSocketRouter: webSocketRouter, configuration: .init(ws: .init(maxFrameSize: 1 << 20))),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "canopy"),
        services: [
            database.primary, database.notifier,
            ChangeHistoryPurger(primary: database.primary, retention: configuration.changeRetention, interval: configuration.purgeInterval, logger: logger),
        ] + (database.replicas.map { [$0] } ?? []),
        logger: logger
    )
}

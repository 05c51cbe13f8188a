import ArgumentParser
import CanopyAdmin
import CanopyAssets
import CanopyGateway
import CanopyIdentity
import CanopyPush
import CanopyRequestStore
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle

/// `canopy serve`: migrates, then serves `/graphql` until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the identity providers, migrate, then serve /graphql, /health and /metrics; stops gracefully on SIGINT/SIGTERM.",
        discussion: """
        Traces: off unless OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp) is set; \
        then a span per request goes over OTLP/HTTP, sampled as OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG say \
        (OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off). See docs/TRACING.md.
        """
    )

    @Option(help: "Address to listen on (env CANOPY_HOST).")
    var host: String = ProcessInfo.processInfo.environment["CANOPY_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on (env CANOPY_PORT).")
    var port: Int = Int(ProcessInfo.processInfo.environment["CANOPY_PORT"] ?? "") ?? 8080

    @Option(name: .customLong("public-url"), help: "Base URL clients reach this server at, used in share and download URLs; an https URL also turns on Strict-Transport-Security (env CANOPY_PUBLIC_URL).")
    var publicURL: String?

    @Option(name: .customLong("change-retention-days"), help: "Days tombstones and zone departures are kept for change feeds; older change tokens are CHANGE_TOKEN_EXPIRED (env CANOPY_CHANGE_RETENTION_DAYS).")
    var changeRetentionDays: Double = Double(ProcessInfo.processInfo.environment["CANOPY_CHANGE_RETENTION_DAYS"] ?? "") ?? 30

    @Option(name: .customLong("share-activity-retention-days"), help: "Days a deleted share's activity log is kept for its owner (env CANOPY_SHARE_ACTIVITY_RETENTION_DAYS).")
    var shareActivityRetentionDays: Double = Double(ProcessInfo.processInfo.environment["CANOPY_SHARE_ACTIVITY_RETENTION_DAYS"] ?? "") ?? 90

    @Option(name: .customLong("auth-config"), help: ArgumentHelp(
        "JSON file of the identity providers whose JWTs sign people in (env CANOPY_AUTH_CONFIG); see docs/IDENTITY.md.",
        valueName: "file"))
    var authConfig: String?

    @Option(name: .customLong("cors-origin"), help: ArgumentHelp(
        "A browser origin allowed to call /graphql, e.g. https://app.example.com; repeat for more; none by default (env CANOPY_CORS_ORIGINS, comma-separated).",
        valueName: "origin"))
    var corsOrigins: [String] = (ProcessInfo.processInfo.environment["CANOPY_CORS_ORIGINS"] ?? "")
        .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }

    @OptionGroup var assets: AssetDirectoryOptions

    @Option(name: .customLong("max-asset-size"), help: ArgumentHelp(
        "The largest upload accepted, in bytes (env CANOPY_MAX_ASSET_SIZE; default 52428800, CloudKit's 50 MB); larger ones are HTTP 413 and nothing is kept.",
        valueName: "bytes"))
    var maximumAssetSize: Int64 = Int64(ProcessInfo.processInfo.environment["CANOPY_MAX_ASSET_SIZE"] ?? "") ?? AssetSettings.defaultMaximumSize

    @Option(name: .customLong("web-dir"), help: ArgumentHelp(
        "Directory of the web console's files, served at / and /console/ (env CANOPY_WEB_DIR; default: web beside the migrations directory); see docs/CONSOLE.md.",
        valueName: "dir"))
    var webDirectory: String?

    @Option(name: .customLong("js-dir"), help: ArgumentHelp(
        "Directory of CanopyJS, the JavaScript client the console is built on, served at /js/ (env CANOPY_JS_DIR; default: clients/js beside the migrations directory); see clients/js/README.md.",
        valueName: "dir"))
    var clientPackageDirectory: String?

    @Flag(name: .customLong("no-console"), help: "Serve no web console at / and no CanopyJS at /js/ (the invitation page at /share/<token> stays).")
    var noConsole = false

    @Flag(name: .customLong("console-over-http"), help: "Serve the console over plain HTTP to browsers on other machines too; by default they get it only when --public-url is https (a TLS proxy in front), since the page carries their sign-in (env CANOPY_CONSOLE_OVER_HTTP=1).")
    var consoleOverHTTP = false

    @Flag(name: .customLong("access-log"), help: "Log a line for every request, at info (env CANOPY_ACCESS_LOG=1). Off by default: errors are logged either way.")
    var accessLog = false

    @Option(name: .customLong("plan-cache-size"), help: ArgumentHelp(
        "How many planned statements of records and lookup requests to keep, by document and shape, so a request of a shape seen before only binds its values (env CANOPY_PLAN_CACHE_SIZE; default 1024; 0 turns the cache off). See docs/PLAN_CACHE.md.",
        valueName: "count"))
    var planCacheSize: Int?

    @OptionGroup var limits: LimitOptions
    @OptionGroup var push: PushOptions
    @OptionGroup var outbound: OutboundOptions
    @OptionGroup var webServices: WebServicesOptions
    @OptionGroup var replicas: ReplicaOptions
    @OptionGroup var pool: PoolOptions
    @OptionGroup var mode: ModeOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var migrations: MigrationsOptions

    func validate() throws {
        guard changeRetentionDays >= 0, changeRetentionDays.isFinite else {
            throw ValidationError("--change-retention-days must be 0 or more, got \(changeRetentionDays)")
        }
        guard shareActivityRetentionDays >= 0, shareActivityRetentionDays.isFinite else {
            throw ValidationError("--share-activity-retention-days must be 0 or more, got \(shareActivityRetentionDays)")
        }
        try replicas.validate()
        try limits.validate()
        try push.validate()
        guard maximumAssetSize > 0 else {
            throw ValidationError("--max-asset-size must be a positive number of bytes, not \(maximumAssetSize)")
        }
        if let planCacheSize, planCacheSize < 0 {
            throw ValidationError("--plan-cache-size must be 0 or more, got \(planCacheSize)")
        }
        do {
            _ = try CrossOriginPolicy(origins: corsOrigins)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = {
            var logger = Logger(label: "canopy")
            logger.logLevel = database.verbose ? .debug : .info
            return logger
        }()
        // Before anything else runs a task: the global executor is the
        // process's for its life (DECISIONS 197).
        let concurrencyOnLoops = ConcurrencyOnLoops.install(pool.concurrencyOnLoops, logger: logger)
        // The identity providers first: a configuration that cannot work
        // stops here, before anything is migrated or served.
        let authConfiguration: AuthConfiguration?
        let crossOrigin: CrossOriginPolicy
        do {
            let path = authConfig ?? ProcessInfo.processInfo.environment["CANOPY_AUTH_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
            authConfiguration = try path.map { path throws(IdentityError) in try AuthConfiguration.load(path: path) }
            crossOrigin = try CrossOriginPolicy(origins: corsOrigins)
        } catch {
            throw fail(error)
        }
        // Traces, when the OTEL_* variables ask (docs/TRACING.md): a bad
        // setting stops here, with words.
        let traceExport: TraceExport?
        do {
            traceExport = try TraceExport.fromEnvironment(ProcessInfo.processInfo.environment, logger: logger)
        } catch {
            throw fail(error)
        }
        let pushSettings: PushSettings?
        do {
            pushSettings = try push.settings()
        } catch {
            throw fail(error)
        }
        let assetSettings: AssetSettings
        do {
            let directory = self.assets.directory(database)
            assetSettings = AssetSettings(store: try await FileAssetStore(directory: directory), maximumSize: maximumAssetSize)
        } catch {
            throw fail(error)
        }
        var console: ConsoleFiles?
        var clientPackage: ConsoleFiles?
        if !noConsole {
            let packageDirectory = clientPackageDirectory ?? ProcessInfo.processInfo.environment["CANOPY_JS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
                ?? URL(fileURLWithPath: migrations.directory).deletingLastPathComponent().appendingPathComponent("clients/js").path
            do {
                clientPackage = try ConsoleFiles.load(directory: packageDirectory, required: "index.js", what: "CanopyJS's",
                                                      option: "--js-dir, set CANOPY_JS_DIR, or turn the console off with --no-console")
            } catch {
                throw fail(error)
            }
            let directory = webDirectory ?? ProcessInfo.processInfo.environment["CANOPY_WEB_DIR"].flatMap { $0.isEmpty ? nil : $0 }
                ?? URL(fileURLWithPath: migrations.directory).deletingLastPathComponent().appendingPathComponent("web").path
            do {
                console = try ConsoleFiles.load(directory: directory)
            } catch {
                throw fail(error)
            }
        }
        let resolved: DatabaseSetup.Resolved
        let engine: DatabaseEngine
        var distributed = false
        do {
            let migrator = migrations.migrator(logger: logger)
            let setup = database.setup
            resolved = try await withAdminConnection(database, logger: logger) { connection, resolved in
                try await migrator.up(connection: connection) { logger.info("\($0)") }
                if let password = setup.gatewayPassword, setup.databaseURL != nil {
                    try await DatabaseSetup.setGatewayPassword(password, connection: connection, logger: logger)
                }
                return resolved
            }
            // Probe as the gateway role before serving: a bad password or
            // host must fail now, with words, not hang a request later.
            let probe = try await DatabaseSetup.connect(resolved.gateway, logger: logger)
            do {
                engine = try await DatabaseEngine.detect(on: probe, logger: logger)
                if engine == .citus {
                    distributed = try await CitusDistribution.zonesAreDistributed(probe, logger: logger)
                }
            } catch {
                try? await probe.close()
                throw error
            }
            try? await probe.close()
            if engine == .citus {
                logger.info("the database is a Citus coordinator: each request says who it acts for by SET LOCAL (docs/CITUS.md)")
                logger.info(distributed
                    ? "its tables are distributed: each zone's rows are on its owner's shard (DECISIONS 184)"
                    : "its tables are on the coordinator until `canopy migrate up --distribute` (docs/CITUS.md)")
            }
        } catch {
            throw fail(error)
        }

        var configuration = GatewayConfiguration(
            host: host, port: port,
            publicURL: publicURL ?? ProcessInfo.processInfo.environment["CANOPY_PUBLIC_URL"],
            changeRetention: .seconds(changeRetentionDays * 24 * 3600),
            shareActivityRetention: .seconds(shareActivityRetentionDays * 24 * 3600),
            crossOrigin: crossOrigin,
            accessLog: accessLog || ProcessInfo.processInfo.environment["CANOPY_ACCESS_LOG"] == "1",
            assets: assetSettings,
            console: console,
            clientPackage: clientPackage,
            signInProviders: authConfiguration?.providers ?? [],
            limits: limits.limits,
            push: pushSettings,
            outbound: try outbound.policy(),
            webServices: try webServices.settings()
        )
        configuration.consoleOverPlainHTTP = consoleOverHTTP || ProcessInfo.processInfo.environment["CANOPY_CONSOLE_OVER_HTTP"] == "1"
        let environment = ProcessInfo.processInfo.environment
        if let size = planCacheSize ?? environment["CANOPY_PLAN_CACHE_SIZE"].flatMap({ Int($0) }) {
            configuration.planCacheSize = max(0, size)
        }
        if environment["CANOPY_PLAN_CACHE_VERIFY"] == "1" { configuration.planCacheVerification = .compare }
        configuration.statementTimeout = .milliseconds(Int64(pool.statementTimeout * 1000))
        var verifier: TokenVerifier?
        if let authConfiguration {
            let identity = await TokenVerifier(configuration: authConfiguration, logger: logger)
            await identity.prefetchKeys()
            logger.info("identity providers", metadata: ["canopy.providers": "\(authConfiguration.providers.map(\.name))"])
            verifier = identity
        }
        let replicaEndpoints: [DatabaseEndpoint]
        do {
            replicaEndpoints = try replicas.endpoints(readingAs: resolved.gateway)
        } catch {
            throw fail(error)
        }
        let gatewayDatabase = try RequestDatabase(
            endpoint: resolved.gateway, maximumConnections: pool.connections,
            availabilityTimeout: .milliseconds(Int64(pool.availabilityTimeout * 1000)),
            statementTimeout: configuration.statementTimeout, listenerHeartbeat: .milliseconds(Int64(pool.listenerHeartbeat * 1000)),
            schemaMode: mode.mode.rawValue,
            replicas: replicaEndpoints, replicaSettings: replicas.settings, tracing: traceExport?.tracing, engine: engine,
            servingLoops: pool.serveOnLoop ? ServingLoops(group: EventLoopGroupProvider.singleton.eventLoopGroup, pinsTasks: !concurrencyOnLoops) : nil,
            loopConnections: pool.loopConnections, logger: logger
        )
        if !replicaEndpoints.isEmpty {
            logger.info("read replicas", metadata: ["canopy.replicas": "\(replicaEndpoints.map(\.displayURL))"])
        }
        let app = buildApplication(configuration: configuration, database: gatewayDatabase, identity: verifier, logger: logger, metricsRegistry: registry)
        var groupConfiguration = ServiceGroupConfiguration(
            // The exporter first: it starts before the server and stops
            // after it, sending the last requests' spans. Its ending, or
            // failing (a collector away at the stop), never ends the
            // server or fails the stop: spans are lost, not answers.
            services: (traceExport.map {
                [.init(service: $0.service, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)]
            } ?? []) + [.init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // Draining takes at most 15 s, then tasks are cancelled; one that
        // ignores cancellation for 10 s more ends the process (a fatal
        // error naming it), and whatever still holds it the watchdog ends
        // 30 s after the signal: a stop never waits for ever.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(15)
        groupConfiguration.maximumCancellationDuration = .seconds(10)
        let watchdog = ShutdownWatchdog(limit: .seconds(30), logger: logger)
        let group = ServiceGroup(configuration: groupConfiguration)
        if let traceExport {
            logger.info("tracing", metadata: [
                "canopy.otlp_endpoint": "\(traceExport.endpoint)",
                "canopy.sampler": "\(ProcessInfo.processInfo.environment["OTEL_TRACES_SAMPLER"] ?? "parentbased_always_on")",
            ])
        }
        logger.info("serving", metadata: ["canopy.url": "http://\(host):\(port)/graphql", "canopy.database": "\(resolved.gateway.displayURL)", "canopy.mode": "\(mode.mode.rawValue)"])
        try await group.run()
        withExtendedLifetime(watchdog) {}
        if resolved.startedCluster, let cluster = resolved.cluster {
            try? await cluster.stop(logger: logger)
        }
        logger.info("stopped")
    }
}

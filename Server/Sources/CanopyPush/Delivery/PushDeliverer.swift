import AsyncHTTPClient
import CanopyOutbound
import CanopyPlanner
import CanopyRequestStore
import Foundation
import Logging
import Metrics
import NIOCore
import NIOSSL
import PostgresNIO
import ServiceLifecycle

/// Takes committed changes from the push outbox to devices (docs/PUSH.md):
/// fans each out as its subscribers (``PushFanOut``), then sends what is
/// due, at least once: a delivery is deleted only after the push service
/// accepted it. Runs in every `canopy serve`; gateways share the work
/// through `FOR UPDATE SKIP LOCKED` claims with leases, so a gateway that
/// dies mid-way leaves its claims to the others (or to itself, restarted).
/// Woken by the outbox writer's NOTIFY, and polls for retries coming due.
public final class PushDeliverer: Service, Sendable {
    /// A QUERY subscription's record type's schema, to compile its filter.
    public typealias SchemaSource = @Sendable (_ recordType: String, _ logger: Logger) async throws -> RecordSchema

    private let database: RequestDatabase
    private let settings: PushSettings
    private let outbound: OutboundPolicy
    private let schema: SchemaSource
    private let logger: Logger
    private let outboxGauge = Gauge(label: "canopy_push_outbox_backlog")
    private let pendingGauge = Gauge(label: "canopy_push_deliveries_pending")
    private let oldestGauge = Gauge(label: "canopy_push_oldest_pending_seconds")

    /// - Parameter outbound: which webhook and Web Push URLs may be called
    ///   (the gateway's `--outbound-allow` and `--outbound-ports`).
    public init(database: RequestDatabase, settings: PushSettings, outbound: OutboundPolicy = OutboundPolicy(), schema: @escaping SchemaSource, logger: Logger) {
        self.database = database
        self.settings = settings
        self.outbound = outbound
        self.schema = schema
        var logger = logger
        logger[metadataKey: "canopy.service"] = "push"
        self.logger = logger
    }

    public func run() async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = settings.trustedCertificateFile {
            tls.additionalTrustRoots = [.file(file)]
        }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow)
        configuration.timeout = .init(connect: .seconds(5), read: TimeAmount(settings.requestTimeout))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let (subscriber, wakeUps) = database.notifier.subscribe(wants: { $0 == .push })
        let signer: APNsTokenSigner?
        if let credentials = settings.apns {
            signer = try await APNsTokenSigner(credentials)
        } else {
            signer = nil
        }
        let vapid = VAPIDKeyring(secrets: database.secrets, logger: logger)
        let outboundClient = OutboundHTTPClient(policy: outbound, configuration: configuration)
        let channels = Channels(
            client: client, outbound: outboundClient, settings: settings, apns: signer, tracing: database.tracing, vapid: { try await vapid.key(for: $0) }
        )
        let pollInterval = settings.pollInterval
        await cancelWhenGracefulShutdown {
            let (wake, poke) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in wakeUps { poke.yield() }
                }
                group.addTask {
                    while !Task.isCancelled {
                        poke.yield()
                        try? await Task.sleep(for: pollInterval)
                    }
                }
                var lastSample = ContinuousClock.now - .seconds(60)
                for await _ in wake {
                    if Task.isCancelled { break }
                    await self.round(channels)
                    if ContinuousClock.now - lastSample >= .seconds(10) {
                        await self.sampleBacklog()
                        lastSample = .now
                    }
                }
                group.cancelAll()
            }
        }
        database.notifier.unsubscribe(subscriber)
        try? await client.shutdown()
        await outboundClient.shutdown()
    }

    /// One pass: every outbox row fanned out, then every delivery due sent.
    func round(_ channels: Channels) async {
        do {
            while true {
                let entries = try await claimOutbox(limit: 32)
                for entry in entries {
                    try await fanOut(entry)
                }
                if entries.count < 32 { break }
            }
            while true {
                let due = try await claimDeliveries(limit: 64)
                await withTaskGroup(of: Void.self) { group in
                    for delivery in due {
                        group.addTask { await self.send(delivery, channels) }
                    }
                }
                if due.count < 64 { break }
            }
        } catch {
            logger.warning("push delivery interrupted; retrying", metadata: ["canopy.error": "\(String(reflecting: error))"])
        }
    }

    // MARK: Fan-out

    private func claimOutbox(limit: Int) async throws -> [OutboxEntry] {
        let lease = Self.interval(settings.lease)
        return try await database.primary.withConnection { connection in
            try await connection.query(
                "SELECT id, zone_id, after_seq, origin_user, origin_device::text, created_at, trace_parent FROM canopy.claim_push_outbox(\(Int32(limit)), \(lease)::interval)",
                logger: self.logger
            ).collect().map(OutboxEntry.decode)
        }
    }

    private func fanOut(_ entry: OutboxEntry) async throws {
        let candidates = try await database.primary.withConnection { connection in
            try await connection.query(
                "SELECT * FROM canopy.push_candidates(\(entry.zoneID), \(entry.afterSeq))", logger: self.logger
            ).collect().map(PushCandidate.decode)
        }
        let byUser = Dictionary(grouping: candidates, by: \.userID)
        for (userID, theirs) in byUser {
            var predicates: [String: CheckedPredicate] = [:]
            for candidate in theirs {
                guard let query = candidate.query, query.filter != nil else { continue }
                do {
                    predicates[candidate.subscriptionID] = try query.predicate(schema: try await schema(query.recordType, logger))
                } catch {
                    // The schema moved under a saved filter: tell on the type
                    // alone (a notification only says "fetch").
                    logger.notice("a QUERY subscription's filter no longer compiles; it fires on its record type", metadata: [
                        "canopy.subscription": "\(candidate.subscriptionID)", "canopy.error": "\(error)",
                    ])
                }
            }
            let statement = PushFanOut.statement(theirs, entry: entry, predicates: predicates)
            let logger = self.logger
            let queued = try await database.withUser(userID, logger: logger) { connection in
                try await connection.query(statement.postgresQuery, logger: logger).collect().count
            }
            if queued > 0 {
                logger.debug("push queued", metadata: ["canopy.user": "\(userID)", "canopy.devices": "\(queued)"])
            }
        }
        _ = try await database.primary.withConnection { connection in
            try await connection.query("SELECT canopy.finish_push_outbox(\(entry.id))", logger: self.logger)
        }
    }

    // MARK: Sending

    private func claimDeliveries(limit: Int) async throws -> [ClaimedDelivery] {
        let lease = Self.interval(settings.lease), gap = Self.interval(settings.minimumGap)
        return try await database.primary.withConnection { connection in
            try await connection.query(
                """
                SELECT device_id::text, version, subscription_ids, attempts, first_queued_at, kind, apns_token, apns_environment,
                       apns_topic, endpoint, p256dh, auth, webhook_url, webhook_secret, user_record_name, trace_parent
                  FROM canopy.claim_push_deliveries(\(Int32(limit)), \(lease)::interval, \(gap)::interval)
                """,
                logger: self.logger
            ).collect().compactMap(ClaimedDelivery.decode)
        }
    }

    private func send(_ delivery: ClaimedDelivery, _ channels: Channels) async {
        var vapidPublicKey: String?
        if case .webPush = delivery.target {
            vapidPublicKey = try? await database.primary.withConnection { connection in
                try await connection.query("SELECT canopy.push_device_vapid_key(\(delivery.deviceID)::uuid)", logger: self.logger)
                    .collect().first?.decode(String?.self)
            } ?? nil
        }
        let outcome = await channels.send(delivery, vapidPublicKey: vapidPublicKey)
        Counter(label: "canopy_push_sent_total", dimensions: [("channel", delivery.channel), ("outcome", outcome.label)]).increment()
        let metadata: Logger.Metadata = [
            "canopy.device": "\(delivery.deviceID)", "canopy.channel": "\(delivery.channel)", "canopy.attempt": "\(delivery.attempts + 1)",
        ]
        do {
            switch outcome {
            case .delivered:
                let gap = Self.interval(settings.minimumGap)
                _ = try await database.primary.withConnection { connection in
                    try await connection.query(
                        "SELECT canopy.push_delivered(\(delivery.deviceID)::uuid, \(delivery.version), \(gap)::interval)", logger: self.logger)
                }
                logger.debug("push delivered", metadata: metadata)
            case .gone(let reason):
                _ = try await database.primary.withConnection { connection in
                    try await connection.query("SELECT canopy.push_device_gone(\(delivery.deviceID)::uuid)", logger: self.logger)
                }
                logger.info("push device removed: its token or endpoint is gone", metadata: metadata.merging(["canopy.reason": "\(reason)"]) { $1 })
            case .retry, .refused:
                let (reason, after): (String, Duration?) = switch outcome {
                case .retry(let reason, let after): (reason, after)
                case .refused(let reason): (reason, nil)
                default: ("", nil)
                }
                let wait = Self.interval(after ?? Self.backOff(attempts: delivery.attempts, settings: settings))
                let giveUp = Self.interval(settings.giveUpAfter)
                let kept = try await database.primary.withConnection { connection in
                    try await connection.query(
                        "SELECT canopy.push_failed(\(delivery.deviceID)::uuid, \(wait)::interval, \(giveUp)::interval)", logger: self.logger
                    ).collect().first?.decode(Bool.self) ?? false
                }
                let refused = if case .refused = outcome { true } else { false }
                let message: Logger.Message = refused
                    ? (kept ? "push refused: the URL leads inside the operator's network; will check again" : "push given up: the URL kept leading inside the operator's network")
                    : (kept ? "push failed; will retry" : "push given up after retrying")
                logger.log(level: refused ? .warning : .notice, message, metadata: metadata.merging([
                    "canopy.reason": "\(reason)", "canopy.retry_in": "\(wait)",
                ]) { $1 })
            }
        } catch {
            // The claim's lease runs out and the delivery is tried again.
            logger.warning("push outcome not recorded", metadata: metadata.merging(["canopy.error": "\(String(reflecting: error))"]) { $1 })
        }
    }

    /// 1 s, 2 s, 4 s … up to the maximum, each with up to 20% jitter, so
    /// devices that failed together do not retry together.
    static func backOff(attempts: Int, settings: PushSettings) -> Duration {
        let base = settings.firstRetry * (1 << min(attempts, 20))
        let capped = min(base, settings.maximumRetry)
        return capped + capped * Double.random(in: 0...0.2)
    }

    /// An interval PostgreSQL reads (`'1.5 seconds'`).
    static func interval(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return "\(Double(seconds) + Double(attoseconds) / 1e18) seconds"
    }

    private func sampleBacklog() async {
        do {
            let row = try await database.primary.withConnection { connection in
                try await connection.query("SELECT outbox, pending, oldest_seconds FROM canopy.push_backlog()", logger: self.logger)
                    .collect().first?.decode((Int64, Int64, Double).self)
            }
            if let (outbox, pending, oldest) = row {
                outboxGauge.record(outbox)
                pendingGauge.record(pending)
                oldestGauge.record(oldest)
            }
        } catch {
            logger.debug("push backlog not sampled", metadata: ["canopy.error": "\(error)"])
        }
    }
}

/// The three ways out, chosen by the device's kind.
struct Channels: Sendable {
    let webhook: WebhookChannel
    /// The channel signing with the device's VAPID key (the public key it
    /// subscribed with); nil when that key was retired.
    let webPush: @Sendable (_ publicKey: String?) async throws -> WebPushChannel?
    let apns: APNsChannel?

    /// - Parameters:
    ///   - client: for APNs, whose URL is the operator's.
    ///   - outbound: for webhooks and Web Push, whose URLs are users'.
    ///   - tracing: for webhooks of traced writes (docs/TRACING.md).
    init(
        client: HTTPClient, outbound: OutboundHTTPClient, settings: PushSettings, apns signer: APNsTokenSigner?, tracing: CanopyTracing? = nil,
        vapid: @escaping @Sendable (String?) async throws -> VAPIDKey?
    ) {
        webhook = WebhookChannel(client: outbound, timeout: settings.requestTimeout, tracing: tracing)
        webPush = { publicKey in
            try await vapid(publicKey).map { WebPushChannel(client: outbound, vapid: $0, subject: settings.vapidSubject, timeout: settings.requestTimeout) }
        }
        apns = signer.map {
            APNsChannel(client: client, signer: $0, productionURL: settings.apnsProductionURL, sandboxURL: settings.apnsSandboxURL, timeout: settings.requestTimeout)
        }
    }

    /// - Parameter vapidPublicKey: for Web Push, the key the device subscribed with.
    func send(_ delivery: ClaimedDelivery, vapidPublicKey: String?) async -> PushOutcome {
        switch delivery.target {
        case .webhook(let url, let secret):
            return await webhook.send(delivery, url: url, secret: secret)
        case .webPush(let endpoint, let p256dh, let auth):
            do {
                guard let channel = try await webPush(vapidPublicKey) else {
                    return .gone(reason: "the subscription was made with a VAPID key since rotated out; its page must subscribe again")
                }
                return await channel.send(delivery, endpoint: endpoint, p256dh: p256dh, auth: auth)
            } catch {
                return .retry(reason: "the VAPID key could not be read: \(error)", after: nil)
            }
        case .apns(let token, let environment, let topic):
            guard let apns else {
                return .retry(reason: "no APNs key is configured (canopy serve --apns-key-file)", after: .seconds(600))
            }
            return await apns.send(delivery, token: token, environment: environment, topic: topic)
        }
    }
}

import CanopyAssets
import CanopyPlanner
import CanopyRequestStore
import CanopyWAL
import Logging
import Synchronization

/// One `subscribe`: follows its change feed as the subscriber's user and
/// hands each page with changes to `send` as a `next` message. Commits wake
/// it through the gateway's one `LISTEN` connection (``ChangeNotifier``);
/// the pages are read under the subscriber's identity, so row-level
/// security decides what a subscriber can learn, exactly as for
/// `zoneChanges` over HTTP.
struct SubscriptionFeed {
    /// The zone a `zoneChanged` subscription follows, known after its first page.
    private final class FollowedZone: Sendable {
        let id = Mutex<Int64?>(nil)
    }

    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let recordSchemas: RecordSchemas
    let request: GraphQLHTTPRequest
    let userID: Int64
    let requestID: String
    let logger: Logger

    /// The root field's response key, once the document is read (for an error's path).
    private(set) var fieldKey: String?

    init(
        database: RequestDatabase, configuration: GatewayConfiguration, recordSchemas: RecordSchemas, request: GraphQLHTTPRequest,
        userID: Int64, requestID: String, logger: Logger
    ) {
        self.database = database
        self.configuration = configuration
        self.recordSchemas = recordSchemas
        self.request = request
        self.userID = userID
        self.requestID = requestID
        self.logger = logger
    }

    /// Runs until cancelled, the server shuts down or `send` says the
    /// message could not go (false); throws what ends the feed with an error.
    mutating func run(send: (_ message: String) async -> Bool) async throws {
        let check = GraphQLRequestCheck(configuration: configuration)
        let parsed = try check.parse(request)
        guard parsed.operation.operation == .subscription else {
            throw APIError(.badRequest, "over WebSocket Canopy serves subscriptions; send queries and mutations with POST /graphql")
        }
        let fields = try check.rootFields(of: parsed)
        guard let field = fields.first, ["zoneChanged", "databaseChanged"].contains(field.name) else {
            throw APIError(.badRequest, "subscribe to zoneChanged or databaseChanged")
        }
        fieldKey = field.responseKey
        let scope = try parsed.arguments(of: field).string("scope")
        let executor = OperationExecutor(
            database: database, configuration: configuration, recordSchemas: recordSchemas, request: parsed,
            userID: userID, requestID: requestID, logger: logger
        )
        // Which commits may concern this feed: its zone; the owner's zones
        // (PRIVATE); other owners' zones (SHARED: row-level security then
        // decides whether anything is the subscriber's business).
        let followed = FollowedZone()
        let isZoneFeed = field.name == "zoneChanged"
        let userID = self.userID
        let wants: @Sendable (ChangeNotifier.Event) -> Bool = { event in
            guard case .zone(let zone, let owner) = event else { return event == .resync }
            if isZoneFeed { return followed.id.withLock { $0 == nil || $0 == zone } }
            // Owner 0 is the public database's zone: neither PRIVATE nor SHARED.
            return scope == "PRIVATE" ? owner == userID : owner != userID && owner != 0
        }
        // Subscribe before the first read, so no commit falls between them.
        let (subscriber, events) = database.notifier.subscribe(wants: wants)
        defer { database.notifier.unsubscribe(subscriber) }
        var wakeUps = events.makeAsyncIterator()
        var since: String?? = .none
        // After a wake-up, what the commit's page must show: with
        // replicas, the primary's position once woken (ReplicaSet).
        var woken: WALPosition?
        while !Task.isCancelled {
            var page: OperationExecutor.FeedPage
            repeat {
                page = isZoneFeed
                    ? try await executor.zoneChanges(field, overridingSince: since, after: woken)
                    : try await executor.databaseChanges(field, overridingSince: since, after: woken)
                if let zone = page.zoneID { followed.id.withLock { $0 = zone } }
                if !page.isEmpty {
                    // A feed's pages carry no download URLs (zoneChanges over
                    // HTTP signs them); the database's asset marks never
                    // leave the gateway (sql/functions/asset_marks.sql).
                    let json = AssetURLSigner.mayHoldAssets(page.json) ? AssetURLSigner.removingMarks(from: page.json) : page.json
                    guard await send("{\"data\":{\(GraphQLResponse.quoted(field.responseKey)):\(json)}}") else { return }
                }
                since = .some(page.token)
            } while page.moreComing && !Task.isCancelled
            // Wait for a commit that may concern this feed.
            guard await wakeUps.next() != nil else { return }   // the server is shutting down
            woken = await database.replicas?.primaryPosition(logger: logger)
        }
    }
}

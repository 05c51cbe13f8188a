import CanopyPlanner
import CanopyRequestStore
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket

/// `GET /graphql` with `Upgrade: websocket` and the `graphql-transport-ws`
/// subprotocol: live change feeds (`zoneChanged`, `databaseChanged`).
/// The bearer token comes in the upgrade's `Authorization` header or, for
/// browsers that cannot set one, in `connection_init`'s payload.
struct SubscriptionController {
    static let subprotocol = "graphql-transport-ws"

    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let authenticator: Authenticator
    let recordSchemas: RecordSchemas

    func register(on router: Router<CanopyRequestContext>) {
        router.ws("graphql") { request, _ in
            let offered = request.headers[values: .secWebSocketProtocol]
                .flatMap { $0.split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard offered.contains(Self.subprotocol) else { return .dontUpgrade }
            return .upgrade([.secWebSocketProtocol: Self.subprotocol])
        } onUpgrade: { inbound, outbound, context in
            // Breaks HummingbirdWebSocket's context <-> handler cycle (WebSocketSlot).
            defer { context.requestContext.webSocketSlot.release() }
            let session = GraphQLWebSocketSession(
                database: database, configuration: configuration, authenticator: authenticator, recordSchemas: recordSchemas, outbound: outbound,
                headerToken: context.request.headers[.authorization], headerNonce: context.request.headers[.canopyNonce],
                requestID: context.requestContext.requestID,
                logger: context.logger
            )
            // Planned as the HTTP router's requests are (OwnerRoutingMiddleware):
            // a session runs outside that router, and on Citus its pages
            // must name the zone's owner by id to route to one shard.
            await ZoneReference.$namedOwners.withValue(database.engine == .citus ? .routed : .joined) {
                await session.run(inbound)
            }
        }
    }
}

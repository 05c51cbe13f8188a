import CanopyPlanner
import Hummingbird

/// On Citus, plans a request's statements to name a zone's owner by id
/// even when the request names the owner by record name
/// (``ZoneReference/namedOwners``, DECISIONS 169), so each routes to the
/// owner's one shard. Installed only on a Citus coordinator: one
/// PostgreSQL keeps the join it plans best.
struct OwnerRoutingMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await ZoneReference.$namedOwners.withValue(.routed) {
            try await next(request, context)
        }
    }
}

import CanopyRequestStore
import Hummingbird

/// `GET /health`: 200 `{"status":"ok"}` when the database answers, else 503.
struct HealthController {
    let database: RequestDatabase

    func register(on router: Router<CanopyRequestContext>) {
        router.get("health") { _, context -> Response in
            if await database.isHealthy(logger: context.logger) {
                return GraphQLResponse.json("{\"status\":\"ok\"}", status: .ok)
            }
            return GraphQLResponse.json("{\"status\":\"unavailable\"}", status: .serviceUnavailable)
        }
    }
}

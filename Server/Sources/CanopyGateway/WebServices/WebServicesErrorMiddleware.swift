import Hummingbird

/// Every failure under `/database/1/…` becomes a ``WebServicesError``,
/// the reference's error answer, whatever threw it, rendered here: outer
/// middleware see an answer, as they did before the route group (the
/// request metrics count a refusal by its status and time it, rather than
/// as a thrown error).
struct WebServicesErrorMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return WebServicesError(error, requestID: context.requestID, logger: context.logger).response
        }
    }
}

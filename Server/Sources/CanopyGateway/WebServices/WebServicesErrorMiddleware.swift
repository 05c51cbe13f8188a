import Hummingbird

/// Every failure under `/database/1/…` becomes a ``WebServicesError``,
/// the reference's error answer, whatever threw it; outer middleware (CORS,
/// the request's span) see it as a response that renders itself.
struct WebServicesErrorMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            throw WebServicesError(error, requestID: context.requestID, logger: context.logger)
        }
    }
}

import Hummingbird

extension RouterMiddleware where Context: RequestContext {
    /// `next`'s response; an error it throws that knows its response (an
    /// ``APIError``) is turned into that response here, so the middleware
    /// can still set its headers on answers that refuse.
    func responding(
        to request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as any HTTPResponseError {
            return try error.response(from: request, context: context)
        }
    }
}

import Hummingbird

/// The path names this deployment's container and environment, or the
/// request is the reference's NOT_FOUND (one container and environment a
/// deployment: DECISIONS 85). The path read is handed on in the context.
struct WebServicesContainerMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext
    let settings: WebServicesSettings

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = try WebServicesController.path(of: request, context: context)
        guard path.container == settings.container, path.environment == settings.environment.rawValue else {
            throw APIError(.unknownItem, "this server answers for container \(settings.container) in its \(settings.environment.rawValue) environment, not \(path.container.prefix(80)) in \(path.environment.prefix(40))")
        }
        var context = context
        context.webServicesPath = path
        return try await next(request, context)
    }
}

import Hummingbird
import NIOCore

/// Who an endpoint's request acts as: a server-to-server key's signature
/// (its user), or the container's `ckAPIToken` and, when there is one, the
/// person of its `ckWebAuthToken` (``WebServicesController/admit(_:context:next:)``).
/// A refusal of nobody who sent an API token is the reference's 421 with
/// where to sign in; a successful answer to a web auth token carries the
/// token to send next (docs/WEB_SERVICES.md, "The web token rotates").
struct WebServicesCredentialMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext
    let controller: WebServicesController

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await controller.admit(request, context: context, next: next)
    }
}

extension WebServicesController {
    func admit(
        _ request: Request, context: CanopyRequestContext, next: (Request, CanopyRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let path = try Self.path(of: request, context: context)
        let parameters = try Self.parameters(of: request)
        var signedByKey = false
        do {
            // Read once: a signature covers the body; the endpoint reads it again from memory.
            let raw = try await rawBody(request)
            if let signature = try ServerToServerSignature.read(request.headers) {
                try await authenticator.checkCredentialAllowance(of: request, context: context)
                do {
                    try await verify(signature, path: path, body: raw, request: request, context: &context)
                } catch {
                    authenticator.noteIfRefused(error, of: request, context: context)
                    throw error
                }
                signedByKey = true
            } else {
                let apiToken = parameters["ckAPIToken"]
                try await authenticator.meteringCredential(of: request, context: context) {
                    try await checkAPIToken(apiToken, path: path, context: context)
                }
                try await identify(webAuthToken: parameters["ckWebAuthToken"], request: request, context: &context)
            }
            var request = request
            request.body = RequestBody(buffer: raw)
            var response = try await next(request, context)
            if !signedByKey {
                // The answer stands whatever the rotation meets: a write has
                // committed by now. Without a new token the client keeps its own.
                do {
                    if let next = try await nextWebAuthToken(parameters["ckWebAuthToken"], context: context) {
                        response.headers[.cloudKitWebAuthToken] = next
                    }
                } catch {
                    context.logger.warning("the web auth token was not rotated", metadata: ["canopy.error": "\(String(describing: error).prefix(300))"])
                }
            }
            return response
        } catch let error as SignInRequired {
            throw error
        } catch {
            let apiError = APIError(error, requestID: context.requestID, logger: context.logger)
            // Nobody signed in, asked for something that needs a person: sign in.
            if apiError.code == .notAuthenticated && context.userID == nil && !signedByKey && parameters["ckAPIToken"] != nil
                && apiError.statusOverride == nil {
                throw SignInRequired(error: apiError, redirectURL: signInURL(path: path, apiToken: parameters["ckAPIToken"]))
            }
            throw apiError
        }
    }
}

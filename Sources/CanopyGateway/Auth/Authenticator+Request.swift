import Hummingbird

extension Authenticator {
    /// Authenticates an HTTP request (/graphql and /assets alike) and takes
    /// one request from the caller's rate: sets `context.userID`, or returns
    /// the 401 / 503 / 429 response.
    func authenticate(_ request: Request, context: inout CanopyRequestContext) async -> Response? {
        guard let header = request.headers[.authorization], let token = BearerTokenReader.token(in: header) else {
            return GraphQLResponse.errors(
                [APIError(.notAuthenticated, "send Authorization: Bearer <token>: a Canopy token (canopy users token NAME issues one) or an identity provider's JWT")],
                requestID: context.requestID, status: .unauthorized
            )
        }
        do {
            let caller = try await caller(token: token, nonce: request.headers[.canopyNonce], logger: context.logger)
            context.userID = caller.userID
            context.logger[metadataKey: "canopy.user.id"] = .stringConvertible(caller.userID)
            if let wait = limits.takeRequest(for: caller.userID) {
                return GraphQLResponse.errors([limits.rateError(retryingIn: wait)], requestID: context.requestID, status: .tooManyRequests)
            }
            return nil
        } catch {
            let apiError = APIError(error, requestID: context.requestID, logger: context.logger)
            return GraphQLResponse.errors([apiError], requestID: context.requestID, status: apiError.httpStatus)
        }
    }
}

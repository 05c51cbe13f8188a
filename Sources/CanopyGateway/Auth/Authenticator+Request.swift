import Hummingbird

extension Authenticator {
    /// Authenticates an HTTP request (/graphql and /assets alike): sets
    /// `context.userID`, or returns the 401 / 503 response.
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
            return nil
        } catch {
            let apiError = APIError(error, requestID: context.requestID, logger: context.logger)
            return GraphQLResponse.errors([apiError], requestID: context.requestID, status: apiError.httpStatus)
        }
    }
}

import Hummingbird

extension Authenticator {
    /// Authenticates an HTTP request (/graphql and /assets alike) and takes
    /// one request from the caller's rate: sets `context.userID`, or throws
    /// the ``APIError`` that answers 401, 503 or 429. With
    /// `allowingAnonymous`, a request without `Authorization` goes on as
    /// nobody (`context.userID` nil) once its address's rate allows.
    func authenticate(_ request: Request, context: inout CanopyRequestContext, allowingAnonymous: Bool = false) async throws {
        if allowingAnonymous && request.headers[.authorization] == nil {
            let address = anonymous.clientAddress(of: request, channel: context.channel)
            context.logger[metadataKey: "canopy.client"] = .string(address)
            try anonymous.takeRequest(from: address)
            return
        }
        guard let header = request.headers[.authorization], let token = BearerTokenReader.token(in: header) else {
            throw APIError(.notAuthenticated, "send Authorization: Bearer <token>: a Canopy token (canopy users token NAME issues one) or an identity provider's JWT")
        }
        let caller: Caller
        do {
            caller = try await self.caller(token: token, nonce: request.headers[.canopyNonce], logger: context.logger)
        } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger)
        }
        context.userID = caller.userID
        context.logger[metadataKey: "canopy.user.id"] = .stringConvertible(caller.userID)
        if let wait = limits.takeRequest(for: caller.userID) {
            throw limits.rateError(retryingIn: wait)
        }
    }
}

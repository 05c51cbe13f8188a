import Hummingbird

extension Authenticator {
    /// Authenticates an HTTP request (/graphql and /assets alike) by its
    /// `Authorization: Bearer` token and admits it (``admit(token:request:context:allowingAnonymous:)``).
    func authenticate(_ request: Request, context: inout CanopyRequestContext, allowingAnonymous: Bool = false) async throws {
        let header = request.headers[.authorization]
        let token = header.flatMap { BearerTokenReader.token(in: $0) }
        if header != nil && token == nil || token == nil && !allowingAnonymous {
            throw APIError(.notAuthenticated, "send Authorization: Bearer <token>: a Canopy token (canopy users token NAME issues one) or an identity provider's JWT")
        }
        try await admit(token: token, request: request, context: &context, allowingAnonymous: allowingAnonymous)
    }

    /// Admission, the one function both doors call (GraphQL's bearer token,
    /// Web Services' `ckWebAuthToken`): the person a token names, set as
    /// `context.userID`, then one request taken from that user's rate; or,
    /// without a token and where nobody may ask, nobody, at the address's
    /// rate. Throws the ``APIError`` that answers 401, 503 or 429.
    func admit(token: String?, request: Request, context: inout CanopyRequestContext, allowingAnonymous: Bool) async throws {
        guard let token, !token.isEmpty else {
            guard allowingAnonymous else { throw APIError(.notAuthenticated, "sign in first: this request needs a person's token") }
            let address = anonymous.clientAddress(of: request, channel: context.channel)
            context.logger[metadataKey: "canopy.client"] = .string(address)
            try anonymous.takeRequest(from: address)
            return
        }
        let caller: Caller
        do {
            caller = try await self.caller(token: token, nonce: request.headers[.canopyNonce], logger: context.logger)
        } catch {
            throw APIError(error, requestID: context.requestID, logger: context.logger)
        }
        context.userID = caller.userID
        context.logger[metadataKey: "canopy.user.id"] = .stringConvertible(caller.userID)
        try takeRequest(for: caller.userID)
    }

    /// One request from a known user's rate (a server-to-server key's user too).
    func takeRequest(for userID: Int64) throws {
        if let wait = limits.takeRequest(for: userID) {
            throw limits.rateError(retryingIn: wait)
        }
    }
}

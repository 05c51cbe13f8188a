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
        let address = anonymous.clientAddress(of: request, channel: context.channel)
        do {
            try anonymous.checkCredentialAllowance(of: address)
            caller = try await self.caller(token: token, nonce: request.headers[.canopyNonce], logger: context.logger)
        } catch {
            let apiError = APIError(error, requestID: context.requestID, logger: context.logger)
            // A refused credential is metered by address (issue 64): a flood
            // of bad tokens costs what anonymous requests cost.
            if apiError.code == .notAuthenticated { anonymous.noteRefusedCredential(from: address) }
            throw apiError
        }
        context.userID = caller.userID
        context.logger[metadataKey: "canopy.user.id"] = .stringConvertible(caller.userID)
        try takeRequest(for: caller.userID)
    }

    /// Runs a credential's check (Web Services' `ckAPIToken`, a server key's
    /// signature, the sign-in page's token) metered by the request's
    /// address as a bearer token is (issue 64): refused 429 before the
    /// lookup when the address's refused credentials used up the anonymous
    /// rate, and a refusal (401) taken from that allowance.
    func meteringCredential<T>(of request: Request, context: CanopyRequestContext, _ check: () async throws -> T) async throws -> T {
        let address = anonymous.clientAddress(of: request, channel: context.channel)
        try anonymous.checkCredentialAllowance(of: address)
        do {
            return try await check()
        } catch {
            if (error as? APIError)?.code == .notAuthenticated { anonymous.noteRefusedCredential(from: address) }
            throw error
        }
    }

    /// ``meteringCredential(of:context:_:)`` in two halves, for a check
    /// that changes the context (a server key's signature names its user).
    func checkCredentialAllowance(of request: Request, context: CanopyRequestContext) async throws {
        try anonymous.checkCredentialAllowance(of: anonymous.clientAddress(of: request, channel: context.channel))
    }

    func noteIfRefused(_ error: any Error, of request: Request, context: CanopyRequestContext) {
        guard (error as? APIError)?.code == .notAuthenticated else { return }
        noteRefusedCredential(of: request, context: context)
    }

    /// One refusal taken from the address's allowance: a credential that
    /// named nothing (a web courier URL no courier has).
    func noteRefusedCredential(of request: Request, context: CanopyRequestContext) {
        anonymous.noteRefusedCredential(from: anonymous.clientAddress(of: request, channel: context.channel))
    }

    /// One request from a known user's rate (a server-to-server key's user too).
    func takeRequest(for userID: Int64) throws {
        if let wait = limits.takeRequest(for: userID) {
            throw limits.rateError(retryingIn: wait)
        }
    }
}

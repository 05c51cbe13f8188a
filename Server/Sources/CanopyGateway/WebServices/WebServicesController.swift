import CanopyAssets
import CanopyIdentity
import CanopyPlanner
import CanopyWebServices
import CanopyRequestStore
import Foundation
import Hummingbird
import Logging

/// `/database/1/{container}/{environment}/…`: CloudKit Web Services, a
/// second front door onto the same plans, run by the same runner (``PlanRunner``). Checks, in
/// order: the container and environment are this deployment's
/// (NOT_FOUND), the `ckAPIToken` is a live token of that container
/// (AUTHENTICATION_FAILED), the `ckWebAuthToken`, when there is one, is a
/// person's token (else AUTHENTICATION_REQUIRED with the sign-in page's
/// `redirectURL`), the caller's rate; then the endpoint runs. Every answer
/// is the reference's JSON, errors included (docs/WEB_SERVICES.md).
struct WebServicesController {
    let settings: WebServicesSettings
    let database: RequestDatabase
    let configuration: GatewayConfiguration
    let authenticator: Authenticator
    let recordSchemas: RecordSchemas
    let assetURLs: (@Sendable (Logger) async throws -> AssetURLSigner)?

    /// Each operation is a route of its own (`…/:database/records/query`,
    /// `…/tokens/create`), so spans, `/metrics` and access logs name the
    /// endpoint; anything else under the prefix is answered as the
    /// reference answers an unknown operation. The group's middleware
    /// renders every failure as the reference's error
    /// (``WebServicesErrorMiddleware``) and checks the container
    /// (``WebServicesContainerMiddleware``); the endpoints' group checks the
    /// credentials (``WebServicesCredentialMiddleware``). A web courier's
    /// long poll, the sign-in page's settings and the asset upload carry
    /// credentials of their own.
    func register(on router: Router<CanopyRequestContext>) {
        let group = router.group("database/1/:container/:environment")
            .add(middleware: WebServicesErrorMiddleware())
            .add(middleware: WebServicesContainerMiddleware(settings: settings))
        group.get("courier/:token") { request, context in try await courier(request, context: context) }
        group.get("auth/sign-in.json") { request, context in try await signInSettings(request, context: context) }
        group.post(RouterPath(WebServicesAssets.receivePath)) { request, context in try await receiveAsset(request, context: context) }
        let special: Set<String> = ["GET courier/:token", "GET auth/sign-in.json", "POST \(WebServicesAssets.receivePath)"]

        let endpoints = group.group().add(middleware: WebServicesCredentialMiddleware(controller: self))
        // `:database/**`: an unknown operation, or a database-less one (the
        // router falls back to it when `tokens/…` has no such operation).
        var paths: Set<String> = ["courier/:token", "auth/sign-in.json", WebServicesAssets.receivePath, ":database/**"]
        for (operation, endpoint) in WebServicesEndpoints.served {
            if endpoint.databases.contains(where: { !$0.isEmpty }) { paths.insert(":database/\(operation)") }
            if endpoint.databases.contains("") { paths.insert(operation) }
        }
        // Every route's prefixes too (`…/private/records`, `…/tokens`): the
        // router does not fall back to `**` from a node without a handler,
        // and they are the reference's unknown operations.
        for path in paths where !path.hasSuffix("**") {
            let components = path.split(separator: "/")
            for count in 1..<components.count { paths.insert(components.prefix(count).joined(separator: "/")) }
        }
        for path in paths.sorted() {
            if !special.contains("POST \(path)") { endpoints.post(RouterPath(path)) { request, context in try await answer(request, context: context) } }
            if !special.contains("GET \(path)") { endpoints.get(RouterPath(path)) { request, context in try await answer(request, context: context) } }
        }
    }

    /// A request that needs a person and has none: the reference's 421,
    /// with where to sign in.
    struct SignInRequired: Error {
        let error: APIError
        let redirectURL: String
    }

    /// The operation's path: what follows /database/1/CONTAINER/ENVIRONMENT/
    /// (the container and environment checked by ``WebServicesContainerMiddleware``,
    /// which read it once for every step after it).
    static func path(of request: Request, context: CanopyRequestContext) throws -> WebServicesPath {
        if let path = context.webServicesPath { return path }
        let rest = Array(request.uri.path.split(separator: "/", omittingEmptySubsequences: true).dropFirst(4))
        guard let container = context.parameters.get("container"), let environment = context.parameters.get("environment"),
              let path = WebServicesPath(container: container, environment: environment, rest: rest)
        else {
            throw APIError(.unknownItem, "not a Web Services path: /database/1/CONTAINER/ENVIRONMENT/DATABASE/OPERATION")
        }
        return path
    }

    /// The URL's query as a form (`ckAPIToken`, `ckWebAuthToken`, …).
    static func parameters(of request: Request) throws -> FormEncodedQuery {
        do {
            return try FormEncodedQuery(request.uri.query.map { Substring($0) } ?? "")
        } catch {
            throw APIError(.badRequest, error.message)
        }
    }

    /// `GET …/auth/sign-in.json`: the sign-in page's settings, for a live API token.
    func signInSettings(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        let parameters = try Self.parameters(of: request)
        return try await authenticator.meteringCredential(of: request, context: context) {
            try await signInSettings(apiToken: parameters["ckAPIToken"], context: context)
        }
    }

    /// `GET …/courier/<token>`: a web courier's long poll. Its URL is its
    /// only credential; it takes from the address's rate, as a request
    /// without a token.
    func courier(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        var context = context
        let path = try Self.path(of: request, context: context)
        _ = try Self.parameters(of: request)  // a malformed query is 400, as on every route
        try await authenticator.checkCredentialAllowance(of: request, context: context)
        try await identify(webAuthToken: nil, request: request, context: &context)
        let channel = context.channel
        do {
            return try await WebServicesCourier.poll(token: path.operation.dropFirst(WebServicesCourier.pathPrefix.count),
                                                     database: database, settings: settings, logger: context.logger,
                                                     isConnected: { channel.isActive })
        } catch is WebServicesCourier.UnknownCourier {
            authenticator.noteRefusedCredential(of: request, context: context)
            throw APIError(.unknownItem, "no web courier has this URL: tokens/create makes one", status: .notFound)
        }
    }

    /// `POST …/assets/receive`: an upload URL's bytes (the URL signed by `assets/upload`).
    func receiveAsset(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        try await WebServicesAssets.receive(request, parameters: try Self.parameters(of: request), settings: configuration.assets,
                                            database: database, signer: assetURLs, context: context)
    }

    /// An endpoint's answer, its caller admitted by
    /// ``WebServicesCredentialMiddleware`` (which hands on the body it read).
    func answer(_ request: Request, context: CanopyRequestContext) async throws -> Response {
        let path = try Self.path(of: request, context: context)
        let database = path.database ?? ""
        guard let endpoint = WebServicesEndpoints.served[path.operation] else {
            throw notServed(path.operation)
        }
        guard endpoint.databases.contains(database) else {
            throw database.isEmpty ? notServed(path.operation)
                : APIError(.badDatabase, "\(path.operation) is not an operation of the \(database) database")
        }
        if context.userID == nil && (endpoint.needsUser || database != "public") {
            throw SignInRequired(
                error: APIError(.notAuthenticated, "request needs authorization: sign in at redirectURL and send the ckWebAuthToken it returns"),
                redirectURL: signInURL(path: path, apiToken: try Self.parameters(of: request)["ckAPIToken"]))
        }
        let body = try parseBody(try await rawBody(request))
        let call = WebServicesCall(
            database: database, body: WebServicesRequestBody(body),
            runner: PlanRunner(database: self.database, recordSchemas: recordSchemas, userID: context.userID, logger: context.logger,
                               readAfter: request.canopyPosition, device: request.canopyDevice),
            assetURLs: assetURLs,
            recordSchemas: recordSchemas, requestID: context.requestID, logger: context.logger,
            container: settings.container, environment: settings.environment.rawValue, publicURL: configuration.publicURL,
            userID: context.userID, uploadURL: path.operation == "assets/upload" ? uploadURL(logger: context.logger) : nil
        )
        var answer = try await endpoint.handler(call)
        answer.text = try await call.signingAssets(answer.text)
        var response = WebServicesResponse.ok(answer)
        // What this client has seen, to send back (on any gateway), as GraphQL's answers say it.
        if let position = call.runner.positionSeen { response.headers[.canopyPosition] = position.description }
        return response
    }

    /// The container's API token, or AUTHENTICATION_FAILED.
    func checkAPIToken(_ token: String?, path: WebServicesPath, context: CanopyRequestContext) async throws {
        guard let token, !token.isEmpty else {
            throw APIError(.notAuthenticated, "ckAPIToken is required: canopy tokens api add --container \(settings.container) makes one",
                           status: .unauthorized)
        }
        guard try await database.container(ofAPIToken: token, logger: context.logger) == settings.container else {
            throw APIError(.notAuthenticated, "the ckAPIToken is not a live API token of container \(settings.container)", status: .unauthorized)
        }
    }

    /// The person a `ckWebAuthToken` names (a web auth token, a Canopy
    /// token or an identity provider's JWT, as `Authorization: Bearer`
    /// takes), admitted as GraphQL's requests are; without one, nobody, at
    /// the address's rate.
    ///
    /// Signed out, CloudKit JS sends `ckWebAuthToken=null` (its session is
    /// null): that, `undefined` and an empty value are no token, so a
    /// signed-out public read answers as one without the parameter.
    func identify(webAuthToken: String?, request: Request, context: inout CanopyRequestContext) async throws {
        let token = webAuthToken.flatMap { Self.signedOutSpellings.contains($0) ? nil : $0 }
        try await authenticator.admit(token: token, request: request, context: &context, allowingAnonymous: true)
    }

    /// The web auth token an answer hands back in
    /// `X-Apple-CloudKit-Web-Auth-Token`, as CloudKit's do
    /// (docs/WEB_SERVICES.md, "The web token rotates"): a secret older than
    /// the rotation age is replaced and the new token sent; a younger one
    /// is sent again. None when the request's secret was already replaced
    /// (a request that raced another: that one's answer carries the new
    /// token), or its token is a `cnp_…` token or a JWT, which never rotate.
    func nextWebAuthToken(_ presented: String?, context: CanopyRequestContext) async throws -> String? {
        guard context.userID != nil, let presented, let token = BearerToken(parsing: presented, as: .webAuth),
              let state = try await database.presentedToken(presented, logger: context.logger), state.isCurrentSecret
        else { return nil }
        guard Date().timeIntervalSince(state.secretSince) >= settings.webTokenRotationAge.secondsValue else { return presented }
        switch try await database.rotateWebToken(token, age: settings.webTokenRotationAge, overlap: settings.webTokenOverlap,
                                                 logger: context.logger) {
        case .rotated(let next): return next.string
        case .current: return presented
        case .replaced: return nil
        }
    }

    /// What a client with no session puts in `ckWebAuthToken`.
    static let signedOutSpellings: Set<String> = ["", "null", "undefined"]

    /// The body's bytes (empty for a GET), within the size limit.
    func rawBody(_ request: Request) async throws -> ByteBuffer {
        guard request.method == .post else { return ByteBuffer() }
        do {
            return try await request.body.collect(upTo: configuration.maximumBodySize)
        } catch {
            throw APIError(.limitExceeded, "the request body is larger than the limit of \(configuration.maximumBodySize) bytes", status: .contentTooLarge)
        }
    }

    /// The body as a JSON object: `{}` when it is empty.
    func parseBody(_ buffer: ByteBuffer) throws -> [String: JSONValue] {
        if buffer.readableBytes == 0 { return [:] }
        let value: JSONValue
        do {
            value = try buffer.withUnsafeReadableBytes { bytes throws(QueryError) in try JSONValue(parsing: bytes) }
        } catch {
            throw APIError(.badRequest, "the body is not JSON: \(error.message)")
        }
        guard case .object(let object) = value else {
            throw APIError(.badRequest, "the body must be a JSON object, not \(value.typeName)")
        }
        // PostgreSQL's text and JSONB cannot hold U+0000: refused here,
        // naming where, before any of it reaches the database (issue 48).
        if let place = value.placeOfNUL() {
            throw APIError(.badRequest, "the body\(place) holds the character U+0000 (NUL), which no text may hold")
        }
        return object
    }

    /// A server-to-server request: the key is live and this container's,
    /// the date is fresh, the signature is the key's over this request and
    /// has not been used before, and the database is one the key may reach.
    /// It then acts as the key's user, at that user's rate.
    func verify(
        _ signature: ServerKeySignature, path: WebServicesPath, body: ByteBuffer, request: Request, context: inout CanopyRequestContext
    ) async throws {
        guard let key = try await database.serverKey(signature.keyID, logger: context.logger), key.container == settings.container else {
            throw APIError(.notAuthenticated, "X-Apple-CloudKit-Request-KeyID is not a live server-to-server key of container \(settings.container)", status: .unauthorized)
        }
        let now = Date()
        guard signature.isFresh(now: now) else {
            throw APIError(.notAuthenticated, "the request was signed at \(signature.dateText), more than \(Int(ServerKeySignature.window / 60)) minutes from the server's clock", status: .unauthorized)
        }
        // The reference signs the URL's path; CloudKit JS signs the path
        // with its query string (`?ckjsBuildVersion=…&ckjsVersion=…`), as
        // sent. Either verifies; the one use is the signature's either way.
        let signedPaths = [request.uri.path] + (request.uri.query.map { ["\(request.uri.path)?\($0)"] } ?? [])
        let use = body.withUnsafeReadableBytes { bytes in
            signedPaths.lazy.compactMap { signature.verifiedUse(publicKey: key.publicKey, body: bytes, path: $0) }.first
        }
        guard let use else {
            throw APIError(.notAuthenticated, "the signature does not verify: sign [date]:[base64 of the body's SHA-256]:[the URL's path, with its query string or without] with the key's private key (ECDSA P-256, SHA-256)", status: .unauthorized)
        }
        guard try await database.noteServerSignature(use, signedAt: signature.date,
                                                     oldest: now.addingTimeInterval(-ServerKeySignature.window), logger: context.logger) else {
            throw APIError(.notAuthenticated, "this signature was used before: sign each request anew", status: .unauthorized)
        }
        guard let database = path.database, key.databases.contains(database) else {
            throw APIError(.permissionFailure, "this key may reach the \(key.databases.sorted().joined(separator: " and ")) database\(key.databases.count > 1 ? "s" : ""), not \(path.database ?? path.operation)", status: .forbidden)
        }
        context.userID = key.userID
        context.logger[metadataKey: "canopy.user.id"] = .stringConvertible(key.userID)
        try authenticator.takeRequest(for: key.userID)
    }

    func notServed(_ operation: String) -> APIError {
        if let why = WebServicesEndpoints.notServed[operation] {
            return APIError(.badRequest, "\(operation) is not served by Canopy: \(why) (docs/WEB_SERVICES.md)")
        }
        return APIError(.unknownItem, "there is no Web Services operation \(operation.prefix(80))", status: .notFound)
    }

    /// Signs upload URLs for `assets/upload` (nil without an asset store);
    /// made for that operation alone.
    func uploadURL(logger: Logger) -> (@Sendable (_ userID: Int64) async throws -> String)? {
        guard let assetURLs else { return nil }
        let base = "\(configuration.publicURL)/database/1/\(settings.container)/\(settings.environment.rawValue)/\(WebServicesAssets.receivePath)"
        return { userID in
            let expires = Int64(Date().timeIntervalSince1970 + WebServicesAssets.uploadLifetime)
            let signature = try await assetURLs(logger).uploadSignature(user: userID, expires: expires)
            return "\(base)?user=\(userID)&expires=\(expires)&signature=\(signature)"
        }
    }

    /// Where a person signs in and gets a `ckWebAuthToken` (the 421's
    /// `redirectURL`): the console's Web Services sign-in, which names the
    /// API token by its public prefix only, never its secret.
    func signInURL(path: WebServicesPath, apiToken: String?) -> String {
        var url = "\(configuration.publicURL)/#/web-services/sign-in?container=\(settings.container)&environment=\(settings.environment.rawValue)"
        if let apiToken, let token = BearerToken(parsingAPI: apiToken) {
            url += "&ckAPIToken=\(token.publicPrefix)"
        }
        return url
    }

    /// `GET …/auth/sign-in.json?ckAPIToken=<selector>`: what the sign-in
    /// page needs to hand a person's new web token back: the API token's
    /// callback, or the origins it may post the token to (`--cors-origin`).
    func signInSettings(apiToken: String?, context: CanopyRequestContext) async throws -> Response {
        // The token's first 16 hex digits (after `cka_` for an older token).
        let selector = apiToken.map { String(($0.hasPrefix(BearerToken.containerPrefix) ? $0.dropFirst(BearerToken.containerPrefix.count) : Substring($0)).prefix(16)) } ?? ""
        guard BearerToken.isSelector(selector),
              let found = try await database.signIn(forAPITokenSelector: selector, logger: context.logger),
              found.container == settings.container else {
            throw APIError(.notAuthenticated, "the sign-in page needs ckAPIToken, the prefix of a live API token of container \(settings.container)", status: .unauthorized)
        }
        var body: [String: JSONValue] = [
            "container": .string(settings.container), "environment": .string(settings.environment.rawValue),
            "origins": .array(configuration.crossOrigin.origins.sorted().map(JSONValue.string)),
        ]
        body["callback"] = found.callback.map(JSONValue.string) ?? .null
        return WebServicesResponse.ok(body)
    }
}

import CanopyEncoding
import CanopyPlanner
import CanopyRequestStore
import Crypto
import Foundation
import Hummingbird
import Logging

/// CloudKit JS's notifications (issue 66): `registerForNotifications`
/// calls `tokens/create`, registers the token it gets (`tokens/register`)
/// and long-polls the `webcourierURL`. The courier is a device of the
/// caller's (kind COURIER, migrations/0036) whose notifications wait until
/// the page polls; each poll answers one, in the shape of CloudKit's own
/// push payload, or 204 after ``WebServicesSettings/courierWait`` with
/// nothing, and the page polls again. A notification says which
/// subscription fired and nothing of a zone or record, as every Canopy
/// notification (docs/PUSH.md): the page then fetches the changes.
enum WebServicesCourier {
    /// The courier URL's path after `/database/1/{container}/{environment}/`.
    static let pathPrefix = "courier/"

    /// The token's SHA-256: what the database keeps of it.
    static func tokenHash(_ token: String) -> Data {
        Data(SHA256.hash(data: Data(token.utf8)))
    }

    /// A token's shape: 64 lowercase hex digits (32 random bytes).
    static func isToken(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// `tokens/create`: a new courier for the caller; `apnsEnvironment` is
    /// answered as asked (default production), as the reference's is.
    static func create(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        let environment: String
        switch call.body["apnsEnvironment"] {
        case nil, .null?: environment = "production"
        case .string(let given)? where given == "development" || given == "production": environment = given
        case let other?: throw QueryError(.badRequest, "apnsEnvironment must be development or production, not \(other.jsonText.prefix(20))")
        }
        var random = SystemRandomNumberGenerator()
        let token = Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) })
        _ = try await call.runner.write(WebCourierPlans.register(tokenHash: tokenHash(token))) { rows in rows.count }
        let base = call.publicURL.hasSuffix("/") ? String(call.publicURL.dropLast()) : call.publicURL
        let url = "\(base)/database/1/\(call.container)/\(call.environment)/\(pathPrefix)\(token)"
        return ["apnsEnvironment": .string(environment), "apnsToken": .string(token), "webcourierURL": .string(url)]
    }

    /// Whether `token` is one of the caller's couriers (`tokens/register`
    /// of a token `tokens/create` made: registered already).
    static func isCallersCourier(_ call: WebServicesCall, token: String) async throws -> Bool {
        guard isToken(token) else { return false }
        let found = try await call.runner.read(WebCourierPlans.ofCaller(tokenHash: tokenHash(token))) { rows in
            try rows.first?.decode(String?.self) ?? nil
        }
        return found != nil
    }

    /// A URL that leads to no courier.
    struct UnknownCourier: Error {}

    /// The long poll of `GET …/courier/<token>`: one notification, or 204.
    /// A turn takes a notification only while the page is still connected
    /// (`isConnected`): one that left gets nothing taken for it.
    static func poll(
        token: Substring, database: RequestDatabase, settings: WebServicesSettings, logger: Logger, isConnected: @Sendable () -> Bool
    ) async throws -> Response {
        guard isToken(token) else { throw UnknownCourier() }
        let hash = tokenHash(String(token))
        guard try await database.courierPolled(tokenHash: hash, logger: logger) else { throw UnknownCourier() }
        let clock = ContinuousClock()
        let deadline = clock.now + settings.courierWait
        while true {
            guard isConnected() else { return Response(status: .noContent) }
            switch try await database.courierTake(tokenHash: hash, logger: logger) {
            case .unknown:
                throw UnknownCourier()
            case .fired(let device, let version, let subscriptionID, let kind?, let scope?):
                return WebServicesResponse.ok(payload(
                    container: settings.container, notificationID: notificationID(device: device, version: version, subscriptionID: subscriptionID),
                    subscriptionID: subscriptionID, kind: kind, scope: scope
                ))
            case .fired:
                continue  // a subscription deleted since it fired: the next one
            case .nothing:
                let now = clock.now
                guard now < deadline else { return Response(status: .noContent) }
                try await Task.sleep(for: min(settings.courierInterval, deadline - now))
            }
        }
    }

    /// CloudKit's push payload: `ck` with the container (`cid`), the
    /// notification's ID (`nid`) and, under the kind's key (`met` for a
    /// database subscription, `fet` for a zone's, `qry` for a query's), the
    /// subscription (`sid`) and its database (`dbs`: 1 public, 2 private,
    /// 3 shared, CloudKit's scopes); `aps` says it is silent.
    static func payload(container: String, notificationID: String, subscriptionID: String, kind: String, scope: String) -> [String: JSONValue] {
        let key = kind == "DATABASE" ? "met" : kind == "ZONE" ? "fet" : "qry"
        let database: Int64 = scope == "PUBLIC" ? 1 : scope == "SHARED" ? 3 : 2
        return [
            "aps": .object(["content-available": .int(1)]),
            "ck": .object([
                "cid": .string(container), "nid": .string(notificationID),
                key: .object(["sid": .string(subscriptionID), "dbs": .int(database)]),
            ]),
        ]
    }

    /// The same for every poll that could answer this notification (the
    /// device's version of its queue, and the subscription), in a UUID's
    /// shape, as CloudKit's notification IDs are.
    static func notificationID(device: UUID, version: Int64, subscriptionID: String) -> String {
        let digest = Array(SHA256.hash(data: Data("\(device.uuidString):\(version):\(subscriptionID)".utf8)).prefix(16))
        return UUID(uuid: (digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
                           digest[8], digest[9], digest[10], digest[11], digest[12], digest[13], digest[14], digest[15])).uuidString
    }
}

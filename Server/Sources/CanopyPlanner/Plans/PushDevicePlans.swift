import CanopyEncoding
import Foundation
import PostgresNIO

/// `registerDevice`: where the caller's notifications go, through
/// `canopy.register_push_device` (which finds the device registered already,
/// and moves a token another user registered to the caller). A webhook's
/// signing secret is made by the gateway and answered here, once.
public struct RegisterDevicePlan: Sendable {
    public let statement: SQLStatement
    let fields: [SelectedField]
    let kind: String
    let environment: String?
    let topic: String?
    let endpoint: String?
    let url: String?
    let signingSecret: String?
    /// The URL Canopy will call (a webhook's `url`, a Web Push `endpoint`),
    /// which the gateway puts through the outbound check before running
    /// the plan; nil for APNs.
    public let destination: String?
    private let destinationLocation: [QueryError.Location]

    /// - Parameters:
    ///   - webhookSecret: 32 random bytes, used when `kind` is WEBHOOK.
    ///   - vapidPublicKey: the VAPID public key pages subscribe with now
    ///     (`pushConfiguration`), kept with a WEB_PUSH device: its
    ///     subscription is bound to it (`canopy secrets rotate vapid`).
    public init(_ field: SelectedField, request: ParsedRequest, webhookSecret: [UInt8], vapidPublicKey: String? = nil) throws {
        fields = field.children
        let arguments = request.arguments(of: field)
        let kind = try arguments.requiredString("kind")
        self.kind = kind
        let forbid = { (names: [String]) throws in
            for name in names where try arguments.value(name).map({ !$0.isNull }) ?? false {
                throw arguments.invalid(name, "\(name) is not used by a \(kind) device")
            }
        }
        var token: String?, p256dh: [UInt8]?, auth: [UInt8]?, secret: [UInt8]?
        var environment: String?, topic: String?, endpoint: String?, url: String?
        switch kind {
        case "APNS":
            try forbid(["endpoint", "p256dh", "auth", "url"])
            let text = try arguments.requiredString("apnsToken").lowercased()
            guard (64...200).contains(text.count), text.count % 2 == 0, text.allSatisfy(\.isHexDigit) else {
                throw arguments.invalid("apnsToken", "apnsToken must be the device token in hex (64 or more hex digits)")
            }
            token = text
            environment = try arguments.string("apnsEnvironment") ?? "PRODUCTION"
            guard environment == "PRODUCTION" || environment == "SANDBOX" else {
                throw arguments.invalid("apnsEnvironment", "apnsEnvironment must be SANDBOX or PRODUCTION")
            }
            let bundle = try arguments.requiredString("apnsTopic")
            guard (1...255).contains(bundle.count), bundle.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }) else {
                throw arguments.invalid("apnsTopic", "apnsTopic must be the app's bundle ID (letters, digits, . - _)")
            }
            topic = bundle
        case "WEB_PUSH":
            try forbid(["apnsToken", "apnsTopic", "url"])
            let text = try arguments.requiredString("endpoint")
            guard text.count <= 2048, let parsed = URL(string: text), Self.isAllowed(parsed) else {
                throw arguments.invalid("endpoint", "endpoint must be the push service's https URL")
            }
            endpoint = text
            let key = Base64URL.decode(try arguments.requiredString("p256dh")).map { [UInt8]($0) }
            guard let key, key.count == 65, key.first == 4 else {
                throw arguments.invalid("p256dh", "p256dh must be the subscription's P-256 public key: 65 bytes, uncompressed, base64url")
            }
            let secretBytes = Base64URL.decode(try arguments.requiredString("auth")).map { [UInt8]($0) }
            guard let secretBytes, secretBytes.count == 16 else {
                throw arguments.invalid("auth", "auth must be the subscription's 16-byte authentication secret, base64url")
            }
            p256dh = key
            auth = secretBytes
        case "WEBHOOK":
            try forbid(["apnsToken", "apnsTopic", "endpoint", "p256dh", "auth"])
            let text = try arguments.requiredString("url")
            guard text.count <= 2048, let parsed = URL(string: text), Self.isAllowed(parsed) else {
                throw arguments.invalid("url", "url must be an https URL")
            }
            url = text
            secret = webhookSecret
        default:
            throw arguments.invalid("kind", "kind must be APNS, WEB_PUSH or WEBHOOK, not \(kind)")
        }
        self.environment = environment
        self.topic = topic
        self.endpoint = endpoint
        self.url = url
        destination = url ?? endpoint
        destinationLocation = arguments.location(kind == "WEBHOOK" ? "url" : "endpoint")
        signingSecret = secret.map { Base64URL.encode(Data($0)) }
        var builder = SQLBuilder()
        let k = builder.bind(kind), t = builder.bind(token), e = builder.bind(environment), tp = builder.bind(topic)
        let ep = builder.bind(endpoint), p = builder.bind(p256dh.map { ByteBuffer(bytes: $0) })
        let a = builder.bind(auth.map { ByteBuffer(bytes: $0) }), u = builder.bind(url), s = builder.bind(secret.map { ByteBuffer(bytes: $0) })
        let v = builder.bind(kind == "WEB_PUSH" ? vapidPublicKey : nil)
        builder.append("SELECT canopy.register_push_device(\(k), \(t), \(e), \(tp), \(ep), \(p), \(a), \(u), \(s), \(v))::text")
        statement = builder.query
    }

    /// Web Services' `tokens/register`: an APNs device token, checked as
    /// `registerDevice(kind: APNS)` checks it; the statement answers the
    /// device's id.
    public static func apnsStatement(token: String, environment: String, topic: String) throws(QueryError) -> SQLStatement {
        let token = token.lowercased()
        guard (64...200).contains(token.count), token.count % 2 == 0, token.allSatisfy(\.isHexDigit) else {
            throw QueryError(.badRequest, "apnsToken must be the device token in hex (64 or more hex digits)")
        }
        guard environment == "PRODUCTION" || environment == "SANDBOX" else {
            throw QueryError(.badRequest, "the APNs environment must be development or production")
        }
        guard (1...255).contains(topic.count), topic.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" }) else {
            throw QueryError(.badRequest, "apnsTopic must be the app's bundle ID (letters, digits, . - _)")
        }
        var builder = SQLBuilder()
        let k = builder.bind("APNS"), t = builder.bind(token), e = builder.bind(environment), tp = builder.bind(topic)
        let none = builder.bind(String?.none), noBytes = builder.bind(ByteBuffer?.none)
        builder.append("SELECT canopy.register_push_device(\(k), \(t), \(e), \(tp), \(none), \(noBytes), \(noBytes), \(none), \(noBytes), \(none))::text")
        return builder.query
    }

    /// An absolute http(s) URL with a host. Where it may lead (https only,
    /// public addresses, allowed ports) is the gateway's outbound check,
    /// which resolves the name.
    static func isAllowed(_ url: URL) -> Bool {
        guard let host = url.host, !host.isEmpty else { return false }
        return ["https", "http"].contains(url.scheme?.lowercased())
    }

    /// The error for a destination the outbound check refused, pointing at
    /// the `url` or `endpoint` argument.
    public func refusedDestination(_ reason: String) -> QueryError {
        QueryError(.invalidArguments, "\(kind == "WEBHOOK" ? "url" : "endpoint") may not be called: \(reason)", locations: destinationLocation)
    }
}

extension RegisterDevicePlan: FieldPlan {
    public static var writes: Bool { true }

    public static func decode(_ row: PostgresRow) throws -> String? { try row.decode(String?.self) }

    public func answer(_ row: String??) throws -> String? {
        guard let id = row ?? nil else { throw QueryError(.notAuthenticated, "the caller's user no longer exists") }
        let members = try fields.map { field -> String in
            let value: JSONValue = switch field.name {
            case "deviceID": .string(id)
            case "kind": .string(kind)
            case "apnsEnvironment": environment.map(JSONValue.string) ?? .null
            case "apnsTopic": topic.map(JSONValue.string) ?? .null
            case "endpoint": endpoint.map(JSONValue.string) ?? .null
            case "url": url.map(JSONValue.string) ?? .null
            case "failing": .bool(false)
            case "signingSecret": signingSecret.map(JSONValue.string) ?? .null
            case "__typename": .string("Device")
            default: throw QueryError.noField(field, of: "Device")
            }
            return JSONValue.string(field.responseKey).jsonText + ":" + value.jsonText
        }
        return "{" + members.joined(separator: ",") + "}"
    }
}

/// `devices`: the caller's own (never a webhook's secret).
public struct DevicesPlan: Sendable {
    public let statement: SQLStatement

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        var builder = SQLBuilder()
        let projection = try Projection.object(field.children, &builder) { field, _ in
            switch field.name {
            case "deviceID": return "d.id::text"
            case "kind": return "d.kind"
            case "apnsEnvironment": return "d.apns_environment"
            case "apnsTopic": return "d.apns_topic"
            case "endpoint": return "d.endpoint"
            case "url": return "d.webhook_url"
            case "failing": return "d.failing_since IS NOT NULL"
            case "signingSecret": return "NULL::text"
            case "__typename": return "'Device'"
            default: throw QueryError.noField(field, of: "Device")
            }
        }
        builder.append("""
            SELECT coalesce(json_agg(\(projection) ORDER BY d.created_at, d.id), '[]')::text \
            FROM canopy.push_devices d WHERE d.user_id = canopy.current_user_id() AND d.kind <> 'COURIER'
            """)
        statement = builder.query
    }
}

extension DevicesPlan: FieldPlan {
    public func answer(_ row: JSONRow?) throws -> String? { row?.json ?? "[]" }
}

/// `unregisterDevice(deviceID)`: removes one of the caller's devices (and
/// what it was owed); false when the caller has no such device.
public struct UnregisterDevicePlan: Sendable {
    public let statement: SQLStatement

    public init(_ field: SelectedField, request: ParsedRequest) throws {
        let arguments = request.arguments(of: field)
        let id = try arguments.requiredString("deviceID")
        guard UUID(uuidString: id) != nil else {
            throw arguments.invalid("deviceID", "deviceID must be a device ID as registerDevice answered it")
        }
        var builder = SQLBuilder()
        builder.append("""
            WITH gone AS (DELETE FROM canopy.push_devices \
            WHERE user_id = canopy.current_user_id() AND id = \(builder.bind(id.lowercased()))::uuid RETURNING 1) \
            SELECT count(*)::int FROM gone
            """)
        statement = builder.query
    }
}

extension UnregisterDevicePlan: FieldPlan {
    public static var writes: Bool { true }

    public static func decode(_ row: PostgresRow) throws -> Int { try row.decode(Int.self) }

    public func answer(_ row: Int?) throws -> String? { (row ?? 0) > 0 ? "true" : "false" }
}

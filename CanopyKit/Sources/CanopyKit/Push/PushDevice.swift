import Foundation

/// Where the server sends an account's pushes (docs/API.md §14). CloudKit
/// registers an app's APNs token itself; Canopy is told, once per launch
/// with what the platform handed the app, by `Container.register(_:)`.
public enum PushDevice: Sendable, Hashable {
    /// The token from `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`,
    /// the APNs environment the app was signed for, and its bundle ID (the APNs topic).
    case apns(token: Data, environment: APNsEnvironment, topic: String)
    /// A browser's `PushSubscription.toJSON()`: its endpoint and keys (base64url).
    case webPush(endpoint: URL, p256dh: String, auth: String)
    /// An https URL to a public address (unless the server allows more with
    /// `--outbound-allow`) the server POSTs to, signed with
    /// the secret `RegisteredDevice.signingSecret` shows once.
    case webhook(url: URL)

    public enum APNsEnvironment: String, Sendable, Hashable {
        case sandbox = "SANDBOX"
        case production = "PRODUCTION"
    }
}

/// A device as the server keeps it.
public struct RegisteredDevice: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case apns = "APNS"
        case webPush = "WEB_PUSH"
        case webhook = "WEBHOOK"
    }

    public let deviceID: String
    public let kind: Kind
    /// A notification to it was given up after a day of failures.
    public let failing: Bool
    /// A webhook's HMAC key for `Canopy-Signature`: only in `register(_:)`'s answer.
    public let signingSecret: String?

    init(json: JSON?) throws {
        guard let json, let id = json["deviceID"]?.string, let kind = json["kind"]?.string.flatMap(Kind.init(rawValue:)) else {
            throw CanopyError(.serverResponseLost, "a device without its ID or kind")
        }
        deviceID = id
        self.kind = kind
        failing = json["failing"]?.bool ?? false
        signingSecret = json["signingSecret"]?.string
    }
}

extension PushDevice {
    var variables: [String: JSON] {
        // Only the kind's own variables: the others take the field's defaults.
        var variables: [String: JSON] = [:]
        switch self {
        case .apns(let token, let environment, let topic):
            variables["kind"] = .string("APNS")
            variables["token"] = .string(token.map { String(format: "%02x", $0) }.joined())
            variables["environment"] = .string(environment.rawValue)
            variables["topic"] = .string(topic)
        case .webPush(let endpoint, let p256dh, let auth):
            variables["kind"] = .string("WEB_PUSH")
            variables["endpoint"] = .string(endpoint.absoluteString)
            variables["p256dh"] = .string(p256dh)
            variables["auth"] = .string(auth)
        case .webhook(let url):
            variables["kind"] = .string("WEBHOOK")
            variables["url"] = .string(url.absoluteString)
        }
        return variables
    }

    /// The app's own device: its changes should not wake it.
    var isThisDevice: Bool {
        if case .webhook = self { return false }
        return true
    }
}

import Foundation

/// How the deliverer sends (`canopy serve --apns-*`, `--vapid-subject`,
/// `--push-ca-file`; docs/PUSH.md). Webhooks and Web Push need nothing
/// configured (the VAPID key is made once and kept in the database); APNs
/// needs the team's token-signing key.
public struct PushSettings: Sendable {
    /// APNs token authentication; nil: APNs devices are kept but not sent to
    /// (logged once).
    public var apns: APNsCredentials?
    /// Where APNs is reached, by environment. Overridable for tests (a local
    /// HTTP/2 server that speaks APNs's request shape).
    public var apnsProductionURL = "https://api.push.apple.com"
    public var apnsSandboxURL = "https://api.sandbox.push.apple.com"
    /// The VAPID `sub` claim: how a push service reaches the operator.
    public var vapidSubject = "mailto:push@canopy.invalid"
    /// Extra certificate authorities (PEM) trusted for push services and
    /// webhooks, besides the system's: a local test server, a proxy.
    public var trustedCertificateFile: String?
    /// How often the deliverer looks for work nobody woke it for (a
    /// retry's back-off ending, what a dead gateway left).
    public var pollInterval: Duration = .seconds(1)
    /// At most one push a device in this interval: a burst merges.
    public var minimumGap: Duration = .seconds(1)
    /// How long a claim (outbox row or delivery) is held before another
    /// deliverer may take it over.
    public var lease: Duration = .seconds(30)
    /// Back-off after a failure: from `firstRetry`, doubling, to `maximumRetry`.
    public var firstRetry: Duration = .seconds(1)
    public var maximumRetry: Duration = .seconds(600)
    /// A notification not accepted within this is dropped (the device is
    /// marked failing; the feeds keep every change).
    public var giveUpAfter: Duration = .seconds(86_400)
    /// One webhook or push service request's deadline.
    public var requestTimeout: Duration = .seconds(10)

    public init() {}
}

/// An APNs token-signing key (a `.p8` file from the developer account)
/// with its key ID and team ID.
public struct APNsCredentials: Sendable {
    public var keyPEM: String
    public var keyID: String
    public var teamID: String

    public init(keyPEM: String, keyID: String, teamID: String) {
        self.keyPEM = keyPEM
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Reads the key file, with the error a person can act on.
    public static func load(keyFile: String, keyID: String, teamID: String) throws(PushError) -> APNsCredentials {
        guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
            throw PushError(.invalidConfiguration, "--apns-key-file \(keyFile) cannot be read")
        }
        guard keyID.count == 10, keyID.allSatisfy({ $0.isLetter || $0.isNumber }) else {
            throw PushError(.invalidConfiguration, "--apns-key-id must be the key's 10-character ID, not '\(keyID)'")
        }
        guard teamID.count == 10, teamID.allSatisfy({ $0.isLetter || $0.isNumber }) else {
            throw PushError(.invalidConfiguration, "--apns-team-id must be the 10-character team ID, not '\(teamID)'")
        }
        let credentials = APNsCredentials(keyPEM: pem, keyID: keyID, teamID: teamID)
        _ = try APNsTokenSigner.privateKey(credentials)
        return credentials
    }
}

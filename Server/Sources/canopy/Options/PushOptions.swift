import ArgumentParser
import CanopyPush
import Foundation

/// `canopy serve`'s push deliverer (docs/PUSH.md): APNs's token key, the
/// VAPID contact, extra trusted certificate authorities, or none of it.
struct PushOptions: ParsableArguments {
    private static func environment(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    @Flag(name: .customLong("no-push"), help: "Run no push deliverer in this process (other gateways sharing the database still deliver; env CANOPY_NO_PUSH=1).")
    var noPush = false

    @Option(name: .customLong("apns-key-file"), help: ArgumentHelp(
        "The APNs token-signing key (the .p8 file from the Apple developer account); without it, APNs devices are kept but not sent to (env CANOPY_APNS_KEY_FILE).",
        valueName: "path"))
    var apnsKeyFileFlag: String?
    var apnsKeyFile: String? { apnsKeyFileFlag ?? Self.environment("CANOPY_APNS_KEY_FILE") }

    @Option(name: .customLong("apns-key-id"), help: ArgumentHelp("The key's 10-character ID (env CANOPY_APNS_KEY_ID).", valueName: "id"))
    var apnsKeyIDFlag: String?
    var apnsKeyID: String? { apnsKeyIDFlag ?? Self.environment("CANOPY_APNS_KEY_ID") }

    @Option(name: .customLong("apns-team-id"), help: ArgumentHelp("The 10-character team ID (env CANOPY_APNS_TEAM_ID).", valueName: "id"))
    var apnsTeamIDFlag: String?
    var apnsTeamID: String? { apnsTeamIDFlag ?? Self.environment("CANOPY_APNS_TEAM_ID") }

    @Option(name: .customLong("apns-url"), help: ArgumentHelp(
        "Send APNs requests here instead of Apple's servers, for both environments (a test server; env CANOPY_APNS_URL).",
        valueName: "url"))
    var apnsURLFlag: String?
    var apnsURL: String? { apnsURLFlag ?? Self.environment("CANOPY_APNS_URL") }

    @Option(name: .customLong("vapid-subject"), help: ArgumentHelp(
        "How push services reach the operator, in every Web Push request's VAPID token: mailto: or https: (env CANOPY_VAPID_SUBJECT).",
        valueName: "uri"))
    var vapidSubject: String = environment("CANOPY_VAPID_SUBJECT") ?? PushSettings().vapidSubject

    @Option(name: .customLong("push-ca-file"), help: ArgumentHelp(
        "Certificate authorities (PEM) trusted for push services and webhooks besides the system's (env CANOPY_PUSH_CA_FILE).",
        valueName: "path"))
    var trustedCertificateFileFlag: String?
    var trustedCertificateFile: String? { trustedCertificateFileFlag ?? Self.environment("CANOPY_PUSH_CA_FILE") }

    func validate() throws {
        let apns = [apnsKeyFile, apnsKeyID, apnsTeamID]
        guard apns.allSatisfy({ $0 == nil }) || apns.allSatisfy({ $0 != nil }) else {
            throw ValidationError("--apns-key-file, --apns-key-id and --apns-team-id go together: give all three or none")
        }
        guard vapidSubject.hasPrefix("mailto:") || vapidSubject.hasPrefix("https://") else {
            throw ValidationError("--vapid-subject must be a mailto: or https: URI, not '\(vapidSubject)'")
        }
        if let apnsURL, URL(string: apnsURL)?.scheme != "https" {
            throw ValidationError("--apns-url must be an https URL (APNs speaks HTTP/2 over TLS), not '\(apnsURL)'")
        }
        if let trustedCertificateFile, !FileManager.default.isReadableFile(atPath: trustedCertificateFile) {
            throw ValidationError("--push-ca-file \(trustedCertificateFile) cannot be read")
        }
    }

    /// The deliverer's settings; nil with --no-push.
    func settings() throws(PushError) -> PushSettings? {
        if noPush || ProcessInfo.processInfo.environment["CANOPY_NO_PUSH"] == "1" { return nil }
        var settings = PushSettings()
        if let apnsKeyFile, let apnsKeyID, let apnsTeamID {
            settings.apns = try APNsCredentials.load(keyFile: apnsKeyFile, keyID: apnsKeyID, teamID: apnsTeamID)
        }
        if let apnsURL {
            settings.apnsProductionURL = apnsURL
            settings.apnsSandboxURL = apnsURL
        }
        settings.vapidSubject = vapidSubject
        settings.trustedCertificateFile = trustedCertificateFile
        return settings
    }
}

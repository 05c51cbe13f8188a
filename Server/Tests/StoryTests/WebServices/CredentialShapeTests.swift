@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// What CloudKit client libraries check before they send a credential
/// (docs/WEB_SERVICES.md, "Credentials"): an API token or key id is 64
/// hexadecimal characters; a web auth token is 100 or more characters of
/// the base64 alphabet. Written from the clients' checks, not from Canopy's.
enum CloudKitCredentialShape {
    static func isAPIToken(_ token: String) -> Bool {
        token.wholeMatch(of: /[0-9A-Fa-f]{64}/) != nil
    }

    static func isKeyID(_ keyID: String) -> Bool {
        isAPIToken(keyID)
    }

    static func isWebAuthToken(_ token: String) -> Bool {
        token.wholeMatch(of: /[A-Za-z0-9+\/=_]{100,}/) != nil
    }
}

/// Every credential Canopy issues is in the shape a CloudKit client checks,
/// and works where that client sends it (issue 49).
@Suite("Web Services: credentials in Apple's shapes", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct CredentialShapeTests {
    static func json(_ result: Subprocess.Result) throws -> [String: Any] {
        #expect(result.succeeded, "\(result.output)")
        let line = result.output.split(separator: "\n").last { $0.hasPrefix("{") } ?? ""
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(result.output)")
    }

    @Test("API tokens, key ids and web auth tokens from every issuer match the shapes, and work")
    func everyIssuerMatches() async throws {
        let harness = try await GatewayHarness.make()
        let url = harness.endpoint.url
        // canopy tokens api add
        let apiToken = try await WebServicesFixture.apiToken(on: harness.endpoint)
        #expect(CloudKitCredentialShape.isAPIToken(apiToken) && apiToken == apiToken.lowercased(), "\(apiToken)")
        // canopy keys add
        let key = try ServerToServerTests.register(on: harness.endpoint, as: "alice")
        #expect(CloudKitCredentialShape.isKeyID(key.keyID), "\(key.keyID)")
        // canopy users token NAME --web-auth
        let minted = try Self.json(CanopyBinary.run(["users", "token", "alice", "--web-auth", "--json", "--database-url", url]))
        let mintedToken = try #require(minted["token"] as? String)
        let mintedPrefix = try #require(minted["prefix"] as? String)
        #expect(CloudKitCredentialShape.isWebAuthToken(mintedToken), "\(mintedToken)")
        #expect(mintedToken.count >= 100 && !mintedToken.contains("cnp") && !mintedToken.contains(harness.alice.userRecordName))
        #expect(mintedPrefix == "cnp_" + mintedToken.prefix(16))
        // A Canopy token stays cnp_ (Authorization: Bearer on /graphql).
        let canopyToken = try Self.json(CanopyBinary.run(["users", "token", "alice", "--json", "--database-url", url]))["token"] as? String
        #expect(canopyToken?.hasPrefix("cnp_") == true)

        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            // issueToken(form: WEB_AUTH), as the 421's sign-in page calls it.
            let issued = try await client.call("issueToken", "mutation { issueToken(form: WEB_AUTH) { token prefix } }", token: harness.aliceToken)
            let issuedToken = try #require(issued.object["token"] as? String, "\(issued.body)")
            #expect(CloudKitCredentialShape.isWebAuthToken(issuedToken), "\(issuedToken)")
            #expect(issued.object["prefix"] as? String == "cnp_" + issuedToken.prefix(16))
            let plain = try await client.call("issueToken", "mutation { issueToken { token } }", token: harness.aliceToken)
            #expect((plain.object["token"] as? String)?.hasPrefix("cnp_") == true, "\(plain.body)")

            // Each works where a client sends it: ckAPIToken and ckWebAuthToken,
            // and the web token as a bearer on /graphql too.
            for webToken in [mintedToken, issuedToken] {
                let current = try await client.webServices("private/users/current", apiToken: apiToken, webAuthToken: webToken, method: .get)
                #expect(current.status == .ok && current.body["userRecordName"] as? String == harness.alice.userRecordName, "\(current.body)")
                let me = try await client.call("me", "{ me { userRecordName } }", token: webToken)
                #expect(me.object["userRecordName"] as? String == harness.alice.userRecordName, "\(me.body)")
            }
            // One character changed in the secret: refused (421, sign in again).
            let last = mintedToken.last == "A" ? "B" : "A"
            let forged = try await client.webServices("private/users/current", apiToken: apiToken, webAuthToken: String(mintedToken.dropLast()) + last, method: .get)
            #expect(forged.status.code == 421, "\(forged.body)")
            let forgedAPI = try await client.webServices("private/users/current", apiToken: String(apiToken.dropLast()) + (apiToken.last == "0" ? "1" : "0"), webAuthToken: mintedToken, method: .get)
            #expect(forgedAPI.status == .unauthorized, "\(forgedAPI.body)")

            // The 421's redirect names the API token by its first 16 digits,
            // never the other 48.
            let anonymous = try await client.webServices("private/users/current", apiToken: apiToken, method: .get)
            let redirect = try #require(anonymous.body["redirectURL"] as? String, "\(anonymous.body)")
            #expect(redirect.hasSuffix("&ckAPIToken=\(apiToken.prefix(16))") && !redirect.contains(apiToken.dropFirst(16)), "\(redirect)")
            let signIn = try await client.execute(
                uri: "/database/1/\(WebServicesFixture.container)/production/auth/sign-in.json?ckAPIToken=\(apiToken.prefix(16))", method: .get)
            #expect(signIn.status == .ok, "\(String(buffer: signIn.body))")

            // Revoked by the prefixes that list shows: the web token by its
            // cnp_ prefix, the API token by its first digits.
            #expect(try CanopyBinary.run(["users", "revoke", mintedPrefix, "--database-url", url]).succeeded)
            #expect(try CanopyBinary.run(["tokens", "api", "revoke", String(apiToken.prefix(10)), "--database-url", url]).succeeded)
            let listed = try CanopyBinary.run(["tokens", "api", "list", "--database-url", url])
            #expect(listed.output.contains(String(apiToken.prefix(16))) && !listed.output.contains(apiToken.dropFirst(16)), "\(listed.output)")
            // Seen within the gateways' token caches (4 s); 30 s on a loaded machine.
            let seen = try await eventually(timeout: .seconds(60)) {
                let revoked = try await client.webServices("private/users/current", apiToken: apiToken, webAuthToken: issuedToken, method: .get)
                let signedOut = try await client.call("me", "{ me { userRecordName } }", token: mintedToken)
                return revoked.status == .unauthorized && signedOut.code == "NOT_AUTHENTICATED"
            }
            #expect(seen, "both revocations refused")
        }
    }

    @Test("an API token issued before issue 49 (cka_…) keeps working, and list and revoke name it cka_…")
    func legacyAPITokensHold() async throws {
        let harness = try await GatewayHarness.make()
        let legacy = BearerToken.generate(.legacyAPI)
        #expect(legacy.string.hasPrefix("cka_"))
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            try await connection.query(
                """
                INSERT INTO canopy.container_tokens (container, name, selector, secret_hash, cka_form)
                VALUES (\(WebServicesFixture.container), 'old', \(legacy.selector), \(Data(legacy.secretHash)), true)
                """,
                logger: .init(label: "test")
            ).collect()
        }
        try await harness.test(configuration: WebServicesFixture.configuration(), live: true) { client in
            let zones = try await client.webServices("private/zones/list", apiToken: legacy.string, webAuthToken: harness.aliceToken, method: .get)
            #expect(zones.status == .ok, "\(zones.body)")
            let anonymous = try await client.webServices("private/users/current", apiToken: legacy.string, method: .get)
            #expect((anonymous.body["redirectURL"] as? String)?.hasSuffix("&ckAPIToken=cka_\(legacy.selector)") == true, "\(anonymous.body)")
        }
        let listed = try CanopyBinary.run(["tokens", "api", "list", "--database-url", harness.endpoint.url])
        #expect(listed.output.contains("cka_\(legacy.selector)"), "\(listed.output)")
        let revoked = try CanopyBinary.run(["tokens", "api", "revoke", "cka_\(legacy.selector.prefix(8))", "--database-url", harness.endpoint.url])
        #expect(revoked.succeeded && revoked.output.contains("cka_\(legacy.selector)"), "\(revoked.output)")
    }
}

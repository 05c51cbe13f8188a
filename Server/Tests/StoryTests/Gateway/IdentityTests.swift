@testable import CanopyGatewayTestSupport
import AsyncHTTPClient
import CanopyAdmin
import CanopyGateway
import CanopyIdentity
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

/// Sign-in with an identity provider (docs/API.md §10), end to end: tokens that
/// PyJWT signs, key sets a real HTTP server serves, the gateway through
/// Hummingbird, users written by PostgreSQL.
@Suite("Identity: sign-in with a provider's JWT")
struct IdentityTests {
    typealias Provider = IdentityProviderProcess

    @Test("a provider's token signs a person in: the first request makes the user and its _defaultZone, the next sign-in is the same user, and every operation works")
    func signIn() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        let verifier = await provider.verifier(logger: harness.logs.logger())
        try await harness.test(identity: verifier) { client in
            // A name with a NUL and a newline, longer than the database keeps: cleaned, cut, stored.
            let long = try await provider.mint("rsa1", Provider.claims("long-name", ["name": "Ann\u{0}\nBell" + String(repeating: "e\u{301}", count: 200)]))
            let cleaned = try await client.call("me", "{ me { name } }", token: long)
            let name = try #require(cleaned.object["name"] as? String, "\(cleaned.body)")
            #expect(name.hasPrefix("AnnBell") && name.unicodeScalars.count == 255, "\(name.unicodeScalars.count)")
            let first = try await provider.mint("rsa1", Provider.claims("jane-1", ["name": "Jane Appleseed", "email": "Jane@Example.com", "email_verified": true]))
            let me = try await client.call("me", "{ me { userRecordName name email } }", token: first)
            #expect(me.status == .ok && me.code == nil, "\(me.body)")
            let recordName = try #require(me.object["userRecordName"] as? String)
            #expect(me.object["name"] as? String == "Jane Appleseed")
            #expect(me.object["email"] as? String == "jane@example.com")

            // A later sign-in: a new token for the same (iss, sub), signed
            // with the provider's other key type.
            try await provider.publish(["rsa1", "ec1"])
            let later = try await provider.mint("ec1", Provider.claims("jane-1", ["iat": Int(Date().timeIntervalSince1970) + 1]))
            let again = try await client.call("me", "{ me { userRecordName } }", token: later)
            // ec1 was not in the set fetched first, and the refetch waits a minute: refused for now.
            #expect(again.code == "NOT_AUTHENTICATED", "\(again.body)")
            // The issuer's other spelling is the same person.
            let sameKey = try await provider.mint("rsa1", Provider.claims("jane-1", ["name": "Jane Appleseed", "iss": "idp.canopy.test"]))
            let same = try await client.call("me", "{ me { userRecordName name email } }", token: sameKey)
            #expect(same.object["userRecordName"] as? String == recordName, "the same person is the same user")
            #expect(same.object["email"] as? String == "jane@example.com", "an address stays when a later token omits it")

            // Everything a `canopy users add` user can do.
            let zones = try await client.call("zones", "{ zones(scope: PRIVATE) { zoneName } }", token: sameKey)
            #expect(zones.list.compactMap { $0["zoneName"] as? String } == ["_defaultZone"], "\(zones.body)")
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Fasting\") { zoneName } }", token: sameKey)
            let saved = try await save(client, token: sameKey, [["recordName": "f1", "recordType": "Fast", "fields": ["hours": 16]]])
            #expect(saved.count == 1)
            let found = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"Fasting\"}, recordType: \"Fast\") { records { recordName created { userRecordName } } } }", token: sameKey)
            let record = (found.object["records"] as? [[String: Any]])?.first
            #expect((record?["created"] as? [String: Any])?["userRecordName"] as? String == recordName, "\(found.body)")
        }
        // In psql: one identity row, under row-level security like the rest.
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            let rows = try await connection.query(
                "SELECT u.name, u.display_name, i.provider FROM canopy.identities i JOIN canopy.users u ON u.id = i.user_id WHERE i.subject = 'jane-1'",
                logger: TestDatabase.logger
            )
            var found: [(String, String?, String)] = []
            for try await row in rows.decode((String, String?, String).self) { found.append(row) }
            #expect(found.count == 1)
            #expect(found.first?.0.hasPrefix("idp.") == true, "the handle is the provider and a hash: \(found)")
            #expect(found.first?.2 == "idp")
        }
    }

    @Test("every refusal of docs/API.md §10 is 401 NOT_AUTHENTICATED naming the failed check, and never echoes the token")
    func refusals() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        let verifier = await provider.verifier(logger: harness.logs.logger())
        let now = Int(Date().timeIntervalSince1970)
        let valid = try await provider.mint("rsa1", Provider.claims("p-1"))
        let parts = valid.split(separator: ".").map(String.init)
        let forgedClaims = Provider.claims("p-2")
        let forgedPayload = try JSONSerialization.data(withJSONObject: forgedClaims).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let cases: [(what: String, token: String, says: String)] = [
            ("wrong audience", try await provider.mint("rsa1", Provider.claims("p-1", ["aud": "com.other.app"])), "audience 'com.other.app' is not one provider 'idp' accepts"),
            ("wrong issuer", try await provider.mint("rsa1", Provider.claims("p-1", ["iss": "https://evil.example"])), "issuer 'https://evil.example' is not a configured provider"),
            ("expired", try await provider.mint("rsa1", Provider.claims("p-1", ["exp": now - 120])), "expired at"),
            ("not yet valid", try await provider.mint("rsa1", Provider.claims("p-1", ["nbf": now + 600])), "not valid before"),
            ("alg none", try await provider.mint("none", Provider.claims("p-1")), "alg 'none'"),
            ("tampered payload", "\(parts[0]).\(forgedPayload).\(parts[2])", "the signature does not verify"),
            ("HS256 keyed with the RSA public key", try await provider.mint("hs-with-rsa1-public", Provider.claims("p-1")), "alg 'HS256' is not allowed for provider 'idp'"),
            ("unknown kid", try await provider.mint("rsa1", Provider.claims("p-1"), header: ["kid": "retired"]), "no key with kid 'retired'"),
            ("no exp", try await provider.mint("rsa1", ["iss": Provider.issuer, "aud": Provider.audience, "sub": "p-1"]), "no exp"),
            ("not a JWT", "abc.def", "neither a Canopy token"),
        ]
        try await harness.test(identity: verifier) { client in
            let fine = try await client.call("me", "{ me { userRecordName } }", token: valid)
            #expect(fine.code == nil, "the untouched token works: \(fine.body)")
            let skewed = try await provider.mint("rsa1", Provider.claims("p-1", ["exp": now - 30]))
            #expect(try await client.call("me", "{ me { userRecordName } }", token: skewed).code == nil, "30 s past exp is within the skew")
            for refusal in cases {
                let answer = try await client.call("me", "{ me { userRecordName } }", token: refusal.token)
                #expect(answer.status == .unauthorized, "\(refusal.what): \(answer.body)")
                #expect(answer.code == "NOT_AUTHENTICATED", "\(refusal.what)")
                #expect(answer.message.contains(refusal.says), "\(refusal.what): \(answer.message)")
                for part in refusal.token.split(separator: ".") where part.count > 8 {
                    #expect(!answer.message.contains(part), "\(refusal.what) echoes the token")
                }
            }
        }
        #expect(!harness.logs.text.contains(parts[2]), "no token in the logs")
    }

    @Test("keys rotate from RSA to EC: an unknown kid fetches the key set again, at most once per interval; with the provider down, cached keys still verify")
    func keyRotation() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        let interval: Duration = .seconds(4)
        let verifier = await provider.verifier(refetchInterval: interval, logger: harness.logs.logger())
        try await harness.test(identity: verifier) { client in
            let rsa = try await provider.mint("rsa1", Provider.claims("rotating"))
            let before = try await client.call("me", "{ me { userRecordName } }", token: rsa)
            let person = try #require(before.object["userRecordName"] as? String, "\(before.body)")
            let fetchedOnce = try await provider.fetches()

            // The provider rotates to an EC key; two tokens with the new kid
            // arrive at once: one fetch between them.
            try await Task.sleep(for: interval + .milliseconds(500))
            try await provider.publish(["ec1"])
            let ec = try await provider.mint("ec1", Provider.claims("rotating"))
            let rotated = ContinuousClock.now
            async let first = client.call("me", "{ me { userRecordName } }", token: ec)
            async let second = client.call("me", "{ me { userRecordName } }", token: ec)
            let answers = try await [first, second]
            for answer in answers {
                #expect(answer.object["userRecordName"] as? String == person, "\(answer.body)")
            }
            #expect(try await provider.fetches() == fetchedOnce + 1)
            let stranger = try await provider.mint("rsa2", Provider.claims("rotating"))
            let refused = try await client.call("me", "{ me { userRecordName } }", token: stranger)
            #expect(refused.message.contains("no key with kid 'rsa2'"), "\(refused.body)")
            // (Only checkable while the interval lasts: the full suite can
            // slow this machine down past it.)
            if ContinuousClock.now - rotated < interval {
                #expect(try await provider.fetches() == fetchedOnce + 1, "no second fetch within the interval")
            }

            // The provider goes down: the key held keeps verifying; a new
            // kid is refused, and the failed fetch is logged.
            try await provider.stopKeyServer()
            try await Task.sleep(for: interval + .milliseconds(500))
            let unknown = try await client.call("me", "{ me { userRecordName } }", token: stranger)
            #expect(unknown.code == "NOT_AUTHENTICATED" && unknown.message.contains("no key with kid 'rsa2'"), "\(unknown.body)")
            let still = try await client.call("me", "{ me { userRecordName } }", token: try await provider.mint("ec1", Provider.claims("rotating")))
            #expect(still.object["userRecordName"] as? String == person, "\(still.body)")
        }
        #expect(harness.logs.text.contains("could not fetch the key set"), "the unreachable provider is logged")
    }

    @Test("24 concurrent first requests of one new person make exactly one user")
    func concurrentFirstSignIn() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        let verifier = await provider.verifier(logger: harness.logs.logger())
        let token = try await provider.mint("ec1", Provider.claims("crowd", ["email": "crowd@example.com", "email_verified": true]))
        try await provider.publish(["rsa1", "ec1"])
        // 24 connections of their own (the test client would send them one
        // after another on one connection).
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 24
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let names = try await harness.test(live: true, identity: verifier) { client in
            let port = try #require(client.port)
            return try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<24 {
                    group.addTask {
                        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/graphql")
                        request.method = .POST
                        request.headers.add(name: "Authorization", value: "Bearer \(token)")
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(ByteBuffer(string: #"{"query": "{ me { userRecordName } }"}"#))
                        let response = try await http.execute(request, timeout: .seconds(30))
                        let body = try await response.body.collect(upTo: 1 << 16)
                        let json = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
                        return ((json?["data"] as? [String: Any])?["me"] as? [String: Any])?["userRecordName"] as? String
                    }
                }
                var names: [String?] = []
                for try await name in group { names.append(name) }
                return names
            }
        }
        try await http.shutdown()
        #expect(names.count == 24 && names.allSatisfy { $0 != nil }, "\(names)")
        #expect(Set(names).count == 1)
        try await TestDatabase.withConnection(harness.endpoint) { connection in
            let rows = try await connection.query(
                "SELECT count(*)::int, (SELECT count(*)::int FROM canopy.zones z JOIN canopy.identities i ON i.user_id = z.owner_id WHERE i.subject = 'crowd') FROM canopy.identities WHERE subject = 'crowd'",
                logger: TestDatabase.logger
            )
            for try await (identities, zones) in rows.decode((Int, Int).self) {
                #expect(identities == 1)
                #expect(zones == 1, "one _defaultZone")
            }
        }
    }

    @Test("an unverified email does not accept an invitation sent to that address; a verified one (Apple's \"true\") does; a verified address another user holds stays theirs")
    func verifiedEmailOnly() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        let verifier = await provider.verifier(logger: harness.logs.logger())
        try await harness.test(identity: verifier) { client in
            let alice = harness.aliceToken
            _ = try await client.call("saveZone", "mutation { saveZone(zoneName: \"Friends\") { zoneName } }", token: alice)
            let shared = try await client.call("saveShare", """
                mutation { saveShare(zoneName: "Friends", participants: [{email: "carol@example.com", permission: READ_ONLY}]) { url } }
                """, token: alice)
            let url = try #require(shared.object["url"] as? String, "\(shared.body)")

            let claimed = try await provider.mint("rsa1", Provider.claims("not-carol", ["email": "carol@example.com", "email_verified": false]))
            let me = try await client.call("me", "{ me { email } }", token: claimed)
            #expect(me.object["email"] is NSNull, "an unverified address is not the user's: \(me.body)")
            let refused = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: claimed)
            #expect(refused.code == "PERMISSION_FAILURE", "\(refused.body)")

            let carol = try await provider.mint("rsa1", Provider.claims("carol", ["email": "carol@example.com", "email_verified": "true"]))
            let accepted = try await client.call("acceptShare", "mutation { acceptShare(url: \"\(url)\") { status } }", token: carol)
            #expect(accepted.object["status"] as? String == "ACCEPTED", "\(accepted.body)")

            // alice@example.com is alice's (canopy users add); a provider
            // vouching for it does not make it another user's.
            let other = try await provider.mint("rsa1", Provider.claims("another-alice", ["email": "alice@example.com", "email_verified": true]))
            let second = try await client.call("me", "{ me { userRecordName email } }", token: other)
            #expect(second.object["email"] is NSNull, "\(second.body)")
            #expect(second.object["userRecordName"] as? String != harness.alice.userRecordName, "never merged into alice")
            let aliceMe = try await client.call("me", "{ me { email } }", token: alice)
            #expect(aliceMe.object["email"] as? String == "alice@example.com")
        }
    }

    @Test("a nonce the request sends must match the token's (raw or SHA-256); an HS256 provider verifies only its own secret")
    func nonceAndSharedSecret() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        let secret = "a-shared-secret-of-at-least-32-bytes!"
        let supabase = IdentityProvider(name: "supabase", issuer: "https://xyz.supabase.co/auth/v1", audiences: ["authenticated"], keySource: .hs256Secret(Array(secret.utf8)))
        let verifier = await provider.verifier(extra: [supabase], logger: harness.logs.logger())
        try await harness.test(identity: verifier) { client in
            let hashed = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"   // SHA-256("abc")
            let token = try await provider.mint("rsa1", Provider.claims("nonce-user", ["nonce": hashed]))
            // The raw nonce in the header passes; another, or the claim itself sent back, does not.
            for (nonce, passes) in [("abc", true), ("abd", false), (hashed, false)] {
                let (status, body) = try await client.graphqlWithHeaders("{ me { userRecordName } }", headers: [.authorization: "Bearer \(token)", HTTPField.Name("Canopy-Nonce")!: nonce])
                #expect((status == .ok) == passes, "nonce \(nonce): \(body)")
                if !passes { #expect((firstError(body)["message"] as? String)?.contains("nonce") == true) }
            }
            let withoutHeader = try await client.call("me", "{ me { userRecordName } }", token: token)
            #expect(withoutHeader.message.contains("send the raw nonce in the Canopy-Nonce header"), "\(withoutHeader.body)")
            let noClaim = try await provider.mint("rsa1", Provider.claims("nonce-user"))
            let (status, body) = try await client.graphqlWithHeaders("{ me { userRecordName } }", headers: [.authorization: "Bearer \(noClaim)", HTTPField.Name("Canopy-Nonce")!: "abc"])
            #expect(status == .unauthorized && (firstError(body)["message"] as? String)?.contains("has no nonce claim") == true, "\(body)")
            let claims = ["iss": supabase.issuer, "aud": "authenticated", "sub": "s-1", "exp": Int(Date().timeIntervalSince1970) + 600] as [String: Any]
            let good = try await provider.mint("hs-secret:\(secret)", claims)
            #expect(try await client.call("me", "{ me { userRecordName } }", token: good).code == nil)
            let wrongSecret = try await provider.mint("hs-secret:another-secret-of-at-least-32-bytes", claims)
            let refused = try await client.call("me", "{ me { userRecordName } }", token: wrongSecret)
            #expect(refused.message.contains("signature does not verify"), "\(refused.body)")
            var rsaClaims = claims
            rsaClaims["sub"] = "s-2"
            let rsaForSecret = try await provider.mint("rsa1", rsaClaims)
            let wrongAlg = try await client.call("me", "{ me { userRecordName } }", token: rsaForSecret)
            #expect(wrongAlg.message.contains("alg 'RS256' is not allowed for provider 'supabase'"), "\(wrongAlg.body)")
        }
    }

    @Test("issueToken trades a provider's short-lived JWT for a Canopy token of the same user; revokeToken signs it out, and nobody else's")
    func sessionTokens() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        let verifier = await provider.verifier(logger: harness.logs.logger())
        try await harness.test(identity: verifier) { client in
            let jwt = try await provider.mint("rsa1", Provider.claims("session-1"))
            let me = try await client.call("me", "{ me { userRecordName } }", token: jwt)
            let issued = try await client.call("issueToken", "mutation { issueToken { token prefix kind: __typename } }", token: jwt)
            let token = try #require(issued.object["token"] as? String, "\(issued.body)")
            let prefix = try #require(issued.object["prefix"] as? String)
            #expect(token.hasPrefix(prefix + "_") && prefix.count == 20)
            #expect(issued.object["kind"] as? String == "IssuedToken")
            let same = try await client.call("me", "{ me { userRecordName } }", token: token)
            #expect(same.object["userRecordName"] as? String == me.object["userRecordName"] as? String, "\(same.body)")

            // Another user cannot revoke it; a malformed prefix is named.
            let stranger = try await client.call("revokeToken", "mutation { revokeToken(prefix: \"\(prefix)\") }", token: harness.bobToken)
            #expect(stranger.data as? Bool == false, "\(stranger.body)")
            let malformed = try await client.call("revokeToken", "mutation { revokeToken(prefix: \"cnp_12\") }", token: token)
            #expect(malformed.code == "INVALID_ARGUMENTS" && malformed.message.contains("prefix must be cnp_ and 16 hex digits"), "\(malformed.body)")
            #expect(try await client.call("me", "{ me { name } }", token: token).code == nil)

            let revoked = try await client.call("revokeToken", "mutation { revokeToken(prefix: \"\(prefix)\") }", token: jwt)
            let revokedAt = ContinuousClock.now
            #expect(revoked.data as? Bool == true, "\(revoked.body)")
            let late = try await client.answerFiveSeconds(after: revokedAt, token: token)
            #expect(late.code == "NOT_AUTHENTICATED", "\(late.body)")
            let twice = try await client.call("revokeToken", "mutation { revokeToken(prefix: \"\(prefix)\") }", token: jwt)
            #expect(twice.data as? Bool == false)
        }
    }

    @Test("a key set from a file verifies without any fetch")
    func keySetFile() async throws {
        let harness = try await GatewayHarness.make()
        let provider = try Provider()
        try await provider.publish(["rsa2"])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-jwks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await provider.keySetDocument().write(to: folder.appendingPathComponent("staff.json"))
        let config = #"{"providers": [{"name": "staff", "issuer": "https://sso.example.com", "audiences": ["canopy"], "jwksFile": "staff.json"}]}"#
        try Data(config.utf8).write(to: folder.appendingPathComponent("auth.json"))
        let configuration = try AuthConfiguration.load(path: folder.appendingPathComponent("auth.json").path)
        let verifier = await TokenVerifier(configuration: configuration, logger: harness.logs.logger())
        let fetchesBefore = try await provider.fetches()
        try await harness.test(identity: verifier) { client in
            let token = try await provider.mint("rsa2", ["iss": "https://sso.example.com", "aud": ["canopy", "other"], "sub": "staff-1", "exp": Int(Date().timeIntervalSince1970) + 60])
            let me = try await client.call("me", "{ me { userRecordName } }", token: token)
            #expect(me.code == nil, "\(me.body)")
        }
        #expect(try await provider.fetches() == fetchesBefore)
    }
}

extension TestClientProtocol {
    /// POSTs a document with exactly these headers (plus Content-Type).
    func graphqlWithHeaders(_ query: String, headers extra: HTTPFields) async throws -> (HTTPResponse.Status, [String: Any]) {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers.append(contentsOf: extra)
        let body = try JSONSerialization.data(withJSONObject: ["query": query])
        let response = try await execute(uri: "/graphql", method: .post, headers: headers, body: ByteBuffer(bytes: body))
        return (response.status, try responseJSON(response.body))
    }
}

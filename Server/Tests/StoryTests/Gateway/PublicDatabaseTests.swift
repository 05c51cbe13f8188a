@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

/// Runs `canopy roles ARGS` against `endpoint`.
func rolesCommand(_ arguments: [String], on endpoint: DatabaseEndpoint) throws -> Subprocess.Result {
    try CanopyBinary.run(["roles"] + arguments + ["--database-url", endpoint.url])
}

/// The public database end to end (docs/API.md §15): a schema file with
/// `CREATE ROLE` and `GRANT` lines applied by `canopy schema apply`, roles
/// given by `canopy roles add`, and every cell of ``PublicGrantTable``
/// asked over HTTP through the real stack, with and without a token.
@Suite("The public database", .serialized, .enabled(if: CanopyBinary.exists, "needs the canopy binary (swift build)"))
struct PublicDatabaseTests {
    /// Users with tokens, the schema applied, the roles given.
    struct World: Sendable {
        let harness: GatewayHarness
        let tokens: [String: String]
        let recordNames: [String: String]

        func token(_ who: String) -> String? { who == "nobody" ? nil : tokens[who] }
    }

    static func world() async throws -> World {
        let harness = try await GatewayHarness.make()
        var tokens: [String: String] = [:]
        var recordNames: [String: String] = [:]
        for name in PublicGrantTable.users {
            let (user, token) = try await addUser(name, on: harness.endpoint)
            tokens[name] = token.string
            recordNames[name] = user.userRecordName
        }
        let applied = try schemaCommand(["apply"], file: PublicGrantTable.schema, on: harness.endpoint)
        #expect(applied.succeeded && applied.output.contains("create role Moderator"), "\(applied.output)")
        for (role, user) in [("Moderator", "moderator"), ("Editor", "editor")] {
            let added = try rolesCommand(["add", role, user], on: harness.endpoint)
            #expect(added.succeeded && added.output.contains("now holds \(role)"), "\(added.output)")
        }
        return World(harness: harness, tokens: tokens, recordNames: recordNames)
    }

    static let save = """
        mutation($s: [RecordInput!], $d: [String!], $p: SavePolicy) {
          modifyRecords(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, save: $s, delete: $d, savePolicy: $p) {
            saved { recordName created { userRecordName } zone { zoneName ownerName } } deleted errors { recordName code message } } }
        """

    static let lookup = """
        query($n: [String!]!) { lookup(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, recordNames: $n) {
          recordName record { recordName recordType fields created { userRecordName } } error { code } } }
        """

    func modify(_ client: any TestClientProtocol, as token: String?, save: [[String: Any]] = [], delete: [String] = [], policy: String = "IF_SERVER_RECORD_UNCHANGED") async throws -> Answer {
        try await client.call("modifyRecords", Self.save, ["s": save, "d": delete, "p": policy], as: token)
    }

    func recordErrors(_ answer: Answer) -> [[String: Any]] { answer.object["errors"] as? [[String: Any]] ?? [] }

    @Test("the matrix over HTTP: who × READ, CREATE, WRITE, DELETE × four types' grants, applied from a schema file and canopy roles")
    func matrix() async throws {
        let world = try await Self.world()
        try await world.harness.test { client in
            // Each type's record to read and write, and one to delete for each caller.
            for type in PublicGrantTable.types {
                let owner = world.token(PublicGrantTable.creator(of: type))
                let records = [["recordName": "\(type)1", "recordType": type, "fields": ["title": "first"]]]
                    + PublicGrantTable.callers.map { ["recordName": "del-\($0)-\(type)", "recordType": type, "fields": ["title": "doomed"]] }
                let made = try await modify(client, as: owner, save: records)
                #expect(recordErrors(made).isEmpty && made.code == nil, "\(made.body)")
            }
            var failures: [String] = []
            for who in PublicGrantTable.callers {
                let token = world.token(who)
                for type in PublicGrantTable.types {
                    for privilege in PublicGrantTable.Privilege.allCases {
                        let allowed = PublicGrantTable.allows(who, privilege, type)
                        let cell = "\(who) \(privilege.rawValue) \(type) (\(allowed ? "allowed" : "refused"))"
                        switch privilege {
                        case .read:
                            let found = try await client.call("lookup", Self.lookup, ["n": ["\(type)1"]], as: token)
                            let result = found.list.first ?? [:]
                            let ok = allowed
                                ? (result["record"] as? [String: Any])?["recordName"] as? String == "\(type)1"
                                : (result["error"] as? [String: Any])?["code"] as? String == "UNKNOWN_ITEM" && result["record"] is NSNull
                            let page = try await client.call("records", """
                                { records(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, recordType: "\(type)") { records { recordName } } }
                                """, as: token)
                            let names = (page.object["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
                            if !ok || names.contains("\(type)1") != allowed { failures.append("\(cell): \(found.body) / \(page.body)") }
                        case .create:
                            let answer = try await modify(client, as: token, save: [["recordName": "new-\(who)-\(type)", "recordType": type, "fields": ["title": "x"]]])
                            let ok = allowed
                                ? recordErrors(answer).isEmpty && answer.code == nil
                                : who == "nobody"
                                ? answer.status == .unauthorized && answer.code == "NOT_AUTHENTICATED"
                                : recordErrors(answer).first?["code"] as? String == "PERMISSION_FAILURE"
                            if !ok { failures.append("\(cell): \(answer.status) \(answer.body)") }
                        case .write:
                            let answer = try await modify(client, as: token, save: [["recordName": "\(type)1", "recordType": type, "fields": ["title": "by \(who)"]]], policy: "ALL_KEYS")
                            let ok = allowed
                                ? recordErrors(answer).isEmpty && answer.code == nil
                                : who == "nobody"
                                ? answer.status == .unauthorized
                                : recordErrors(answer).first?["code"] as? String == "PERMISSION_FAILURE"
                            if !ok { failures.append("\(cell): \(answer.status) \(answer.body)") }
                        case .delete:
                            let answer = try await modify(client, as: token, delete: ["del-\(who)-\(type)"])
                            let deleted = (answer.object["deleted"] as? [String]) == ["del-\(who)-\(type)"]
                            let refusal = recordErrors(answer).first?["code"] as? String
                            let ok = allowed
                                ? deleted
                                : who == "nobody" ? answer.status == .unauthorized : !deleted && (refusal == "PERMISSION_FAILURE" || refusal == "UNKNOWN_ITEM")
                            if !ok { failures.append("\(cell): \(answer.status) \(answer.body)") }
                        }
                    }
                }
            }
            #expect(failures.isEmpty, "\(failures.count) cells differ:\n\(failures.joined(separator: "\n"))")
        }
        // Nothing refused was written: each refused delete's record is still there.
        let left = try await TestDatabase.withConnection(world.harness.endpoint) { connection in
            try await connection.texts("SELECT record_name FROM canopy.records WHERE record_name LIKE 'del-%' ORDER BY 1")
        }.compactMap { $0 }
        let expected = PublicGrantTable.callers.flatMap { who in
            PublicGrantTable.types.filter { !PublicGrantTable.allows(who, .delete, $0) }.map { "del-\(who)-\($0)" }
        }.sorted()
        #expect(left == expected)
    }

    @Test("a record knows its creator (created.userRecordName), a save cannot change it, and the zone's ownerName is __defaultOwner__")
    func creator() async throws {
        let world = try await Self.world()
        try await world.harness.test { client in
            let made = try await modify(client, as: world.token("creator"), save: [["recordName": "p1", "recordType": "Post", "fields": ["title": "mine"]]])
            let saved = (made.object["saved"] as? [[String: Any]])?.first ?? [:]
            #expect((saved["created"] as? [String: Any])?["userRecordName"] as? String == world.recordNames["creator"], "\(made.body)")
            #expect((saved["zone"] as? [String: Any])?["ownerName"] as? String == "__defaultOwner__", "\(made.body)")
            let other = try await modify(client, as: world.token("stranger"), save: [["recordName": "p1", "recordType": "Post", "fields": ["title": "theirs"]]], policy: "ALL_KEYS")
            #expect(recordErrors(other).first?["code"] as? String == "PERMISSION_FAILURE", "\(other.body)")
            let seen = try await client.call("lookup", Self.lookup, ["n": ["p1"]], as: nil)
            let record = seen.list.first?["record"] as? [String: Any] ?? [:]
            #expect((record["created"] as? [String: Any])?["userRecordName"] as? String == world.recordNames["creator"], "\(seen.body)")
            #expect((record["fields"] as? [String: Any])?["title"] as? String == "mine", "\(seen.body)")
        }
    }

    @Test("without a token only the public database's reads are open: a request of nothing else is 401, a mix answers the public part")
    func anonymousReachesOnlyPublicReads() async throws {
        let world = try await Self.world()
        try await world.harness.test { client in
            let me = try await client.call("me", "{ me { userRecordName } }", as: nil)
            #expect(me.status == .unauthorized && me.code == "NOT_AUTHENTICATED", "\(me.body)")
            let privateRead = try await client.call("records", "{ records(scope: PRIVATE, zone: {zoneName: \"_defaultZone\"}, recordType: \"Post\") { records { recordName } } }", as: nil)
            #expect(privateRead.status == .unauthorized, "\(privateRead.body)")
            let mixed = try await client.call("lookup", """
                { me { userRecordName } lookup(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, recordNames: ["none"]) { error { code } } }
                """, as: nil)
            #expect(mixed.status == .ok && (mixed.list.first?["error"] as? [String: Any])?["code"] as? String == "UNKNOWN_ITEM", "\(mixed.body)")
            #expect(mixed.code == "NOT_AUTHENTICATED" && (firstError(mixed.body)["path"] as? [String]) == ["me"], "\(mixed.body)")
            let write = try await modify(client, as: nil, save: [["recordName": "x", "recordType": "Post", "fields": [:]]])
            #expect(write.status == .unauthorized, "\(write.body)")
            // GET /graphql without a token: the same rule.
            let query = "{ lookup(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"none\"]) { error { code } } }"
            let encoded = query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let (status, body, _) = try await client.get("/graphql?query=\(encoded)", token: nil)
            #expect(status == .ok && "\(body)".contains("UNKNOWN_ITEM"), "\(body)")
            let meEncoded = "{ me { userRecordName } }".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let (meStatus, _, _) = try await client.get("/graphql?query=\(meEncoded)", token: nil)
            #expect(meStatus == .unauthorized)
        }
    }

    @Test("the public database has one zone and no shares: BAD_DATABASE with a sentence")
    func badDatabase() async throws {
        let world = try await Self.world()
        let token = world.token("creator")!
        try await world.harness.test { client in
            let calls: [(String, String)] = [
                ("zones", "{ zones(scope: PUBLIC) { zoneName } }"),
                ("deleteZone", "mutation { deleteZone(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}) }"),
                ("share", "{ share(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}) { url } }"),
                ("databaseChanges", "{ databaseChanges(scope: PUBLIC) { token } }"),
                ("records", "{ records(scope: PUBLIC, zone: {zoneName: \"Catalog\"}, recordType: \"Post\") { records { recordName } } }"),
                ("saveSubscription", "mutation { saveSubscription(subscriptionID: \"s\", kind: DATABASE, scope: PUBLIC) { subscriptionID } }"),
                ("saveSubscription", "mutation { saveSubscription(subscriptionID: \"s\", kind: ZONE, scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}) { subscriptionID } }"),
            ]
            for (field, query) in calls {
                let answer = try await client.call(field, query, as: token)
                #expect(answer.status == .ok && answer.code == "BAD_DATABASE" && answer.message.contains("public database"), "\(field): \(answer.body)")
            }
        }
    }

    @Test("re-applying a changed grant holds from the next request, and expires public change tokens")
    func grantChange() async throws {
        let world = try await Self.world()
        try await world.harness.test { client in
            _ = try await modify(client, as: world.token("creator"), save: [["recordName": "m1", "recordType": "Member", "fields": ["title": "hi"]]])
            let before = try await client.call("lookup", Self.lookup, ["n": ["m1"]], as: nil)
            #expect((before.list.first?["error"] as? [String: Any])?["code"] as? String == "UNKNOWN_ITEM", "\(before.body)")
            let feed = try await client.call("zoneChanges", "{ zoneChanges(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}) { token changed { recordName } } }", as: nil)
            let token = feed.object["token"] as? String ?? ""
            let opened = PublicGrantTable.schema.replacingOccurrences(of: "GRANT READ, CREATE TO \"_icloud\"", with: "GRANT READ TO \"_world\",\n            GRANT CREATE TO \"_icloud\"")
            let applied = try schemaCommand(["apply"], file: opened, on: world.harness.endpoint)
            #expect(applied.succeeded && applied.output.contains("grants of Member"), "\(applied.output)")
            let after = try await client.call("lookup", Self.lookup, ["n": ["m1"]], as: nil)
            #expect((after.list.first?["record"] as? [String: Any])?["recordName"] as? String == "m1", "\(after.body)")
            let stale = try await client.call("zoneChanges", "query($t: String) { zoneChanges(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}, since: $t) { token } }", ["t": token], as: nil)
            #expect(stale.code == "CHANGE_TOKEN_EXPIRED" && stale.message.contains("grants"), "\(stale.body)")
        }
    }

    @Test("the public feed: filtered by READ, paged, with deletions, live from a token, and a role change expires tokens")
    func feed() async throws {
        let world = try await Self.world()
        let creator = world.token("creator")
        try await world.harness.test { client in
            let posts = (1...5).map { ["recordName": "post\($0)", "recordType": "Post", "fields": ["title": "p\($0)"]] as [String: Any] }
            _ = try await modify(client, as: creator, save: posts + [["recordName": "s1", "recordType": "Secret", "fields": ["title": "hush"]]])
            func page(_ token: String?, since: String?) async throws -> Answer {
                try await client.call("zoneChanges", """
                    query($t: String) { zoneChanges(scope: PUBLIC, zone: {zoneName: "_defaultZone"}, since: $t, limit: 2) {
                      changed { recordName } deleted { recordName } token moreComing } }
                    """, ["t": since ?? NSNull()], as: token)
            }
            func follow(_ token: String?, from start: String? = nil) async throws -> (changed: [String], deleted: [String], token: String) {
                var since = start, changed: [String] = [], deleted: [String] = []
                for _ in 0..<20 {
                    let answer = try await page(token, since: since)
                    #expect(answer.code == nil, "\(answer.body)")
                    changed += (answer.object["changed"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
                    deleted += (answer.object["deleted"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
                    since = answer.object["token"] as? String
                    if answer.object["moreComing"] as? Bool != true { break }
                }
                return (changed, deleted, since ?? "")
            }
            let anonymous = try await follow(nil)
            #expect(anonymous.changed.sorted() == (1...5).map { "post\($0)" }, "nobody reads Post, not Secret: \(anonymous)")
            let own = try await follow(creator)
            #expect(Set(own.changed) == Set((1...5).map { "post\($0)" } + ["s1"]), "\(own)")

            _ = try await modify(client, as: creator, delete: ["post2", "s1"])
            let next = try await follow(nil, from: anonymous.token)
            #expect(next.deleted == ["post2"] && next.changed.isEmpty, "a deletion of what nobody could read stays unseen: \(next)")
            let mine = try await follow(creator, from: own.token)
            #expect(Set(mine.deleted) == ["post2", "s1"], "\(mine)")

            let removed = try rolesCommand(["remove", "Editor", "editor"], on: world.harness.endpoint)
            #expect(removed.succeeded, "\(removed.output)")
            let expired = try await page(nil, since: next.token)
            #expect(expired.code == "CHANGE_TOKEN_EXPIRED", "\(expired.body)")
            let again = try await follow(nil)
            #expect(again.changed.sorted() == ["post1", "post3", "post4", "post5"], "\(again)")
        }
    }

    @Test("live: a signed-in subscriber of zoneChanged(scope: PUBLIC) is told of another user's public record it may read, and not of one it may not")
    func liveFeed() async throws {
        let world = try await Self.world()
        let (creator, stranger) = (world.token("creator"), world.token("stranger")!)
        try await world.harness.test(live: true) { client in
            let close = try await client.subscriptionSocket(token: stranger) { inbox, send in
                try await send("{\"type\":\"connection_init\"}")
                #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                try await send(try subscribeMessage(id: "public", """
                    subscription { zoneChanged(scope: PUBLIC, zone: {zoneName: "_defaultZone"}) { changed { recordName } token } }
                    """))
                // From null: an empty zone sends nothing until something the subscriber may read commits.
                _ = try await modify(client, as: creator, save: [["recordName": "hidden", "recordType": "Secret", "fields": ["title": "mine"]]])
                _ = try await modify(client, as: creator, save: [["recordName": "news", "recordType": "Post", "fields": ["title": "for all"]]])
                var told: [String] = []
                while !told.contains("news") {
                    let message = try #require(try await inbox.next(within: .seconds(60)), "the stranger was not told of the public post")
                    let page = ((message["payload"] as? [String: Any])?["data"] as? [String: Any])?["zoneChanged"] as? [String: Any]
                    told += (page?["changed"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
                }
                #expect(!told.contains("hidden"), "the stranger was told of a record only its creator may read: \(told)")
                try await send("{\"id\":\"public\",\"type\":\"complete\"}")
            }
            #expect(close == 1000)
        }
    }

    /// One request a second without a token per address, a burst of 3, the
    /// address read from X-Forwarded-For.
    static func addressLimited() -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.limits.anonymousRequestsPerSecond = 1
        configuration.limits.anonymousBurst = 3
        configuration.limits.trustsProxyHeader = true
        return configuration
    }

    @Test("issue 64: without a token a document is at most 64 KiB (413 LIMIT_EXCEEDED before parsing); with one, the same document is answered")
    func anonymousDocumentLength() async throws {
        let world = try await Self.world()
        let long = "# " + String(repeating: "x", count: 70_000) + "\n{ lookup(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"x\"]) { recordName } }"
        try await world.harness.test { client in
            let anonymous = try await client.call("lookup", long, as: nil)
            #expect(anonymous.status == .contentTooLarge && anonymous.code == "LIMIT_EXCEEDED", "\(anonymous.body)")
            #expect(anonymous.message.contains("65536"), "\(anonymous.message)")
            let signedIn = try await client.call("lookup", long, as: world.token("stranger"))
            #expect(signedIn.status == .ok, "\(signedIn.body)")
        }
    }

    @Test("issue 64: refused credentials are metered by address: a flood of unknown tokens is answered 429 after the burst, before any lookup; another address and a good token are served")
    func refusedCredentialsMetered() async throws {
        let world = try await Self.world()
        let configuration = Self.addressLimited()
        let query = "{ lookup(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"x\"]) { recordName } }"
        let forwarded = HTTPField.Name("X-Forwarded-For")!
        let good = try #require(world.token("stranger"))
        // Well-formed tokens no one holds: each would cost a lookup.
        @Sendable func unknown(_ index: Int) -> String {
            String(good.prefix(good.count - 6)) + String(format: "%06x", index)
        }
        try await world.harness.test(configuration: configuration, rateLimited: true) { client in
            var statuses: [HTTPResponse.Status] = []
            var codes: [String?] = []
            for index in 0..<12 {
                let answer = try await client.call("lookup", query, as: unknown(index), headers: [forwarded: "198.51.100.9, 127.0.0.1"])
                statuses.append(answer.status)
                codes.append(answer.code)
            }
            #expect(statuses.prefix(3).allSatisfy { $0 == .unauthorized }, "\(statuses)")
            #expect(statuses.suffix(6).allSatisfy { $0 == .tooManyRequests }, "a flood of bad tokens was never slowed: \(statuses)")
            #expect(codes.last == "LIMIT_EXCEEDED", "\(codes)")
            let other = try await client.call("lookup", query, as: unknown(99), headers: [forwarded: "198.51.100.9, 127.0.0.2"])
            #expect(other.status == .unauthorized, "another address is refused for its token, not its neighbour's flood: \(other.body)")
            let signedIn = try await client.call("lookup", query, as: good, headers: [forwarded: "198.51.100.9, 127.0.0.3"])
            #expect(signedIn.status == .ok, "\(signedIn.body)")
        }
    }

    @Test("anonymous requests are limited per client address: a flood from one is answered 429 while another is served")
    func anonymousRate() async throws {
        let world = try await Self.world()
        var configuration = Self.addressLimited()
        let query = "{ lookup(scope: PUBLIC, zone: {zoneName: \"_defaultZone\"}, recordNames: [\"x\"]) { recordName } }"
        let forwarded = HTTPField.Name("X-Forwarded-For")!
        try await world.harness.test(configuration: configuration, rateLimited: true) { client in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<10 {
                statuses.append(try await client.call("lookup", query, as: nil, headers: [forwarded: "198.51.100.7, 127.0.0.1"]).status)
            }
            #expect(statuses.contains(.tooManyRequests) && statuses.prefix(3).allSatisfy { $0 == .ok }, "\(statuses)")
            let other = try await client.call("lookup", query, as: nil, headers: [forwarded: "198.51.100.7, 127.0.0.2"])
            #expect(other.status == .ok, "another address was refused: \(other.body)")
            let signedIn = try await client.call("lookup", query, as: world.token("stranger"), headers: [forwarded: "198.51.100.7, 127.0.0.1"])
            #expect(signedIn.status == .ok, "a signed-in caller has the user's limit, not the address's: \(signedIn.body)")
            // IPv6 counts by /64: other addresses of one network share its bucket, another network has its own.
            var sixes: [HTTPResponse.Status] = []
            for index in 1...10 {
                sixes.append(try await client.call("lookup", query, as: nil, headers: [forwarded: "2001:db8:0:7::\(index)"]).status)
            }
            #expect(sixes.contains(.tooManyRequests), "every address of one /64 had a bucket of its own: \(sixes)")
            let otherNetwork = try await client.call("lookup", query, as: nil, headers: [forwarded: "2001:db8:0:8::1"])
            #expect(otherNetwork.status == .ok, "another /64 was refused: \(otherNetwork.body)")
        }
        // Without --trust-proxy-header the header is the client's say: ignored.
        configuration.limits.trustsProxyHeader = false
        try await world.harness.test(configuration: configuration, rateLimited: true) { client in
            var statuses: [HTTPResponse.Status] = []
            for index in 0..<10 {
                statuses.append(try await client.call("lookup", query, as: nil, headers: [forwarded: "127.0.0.\(index + 10)"]).status)
            }
            #expect(statuses.contains(.tooManyRequests), "a header picked the bucket: \(statuses)")
        }
    }

    @Test("canopy roles and canopy psql --anonymous show what each caller reads")
    func rolesAndPsql() async throws {
        let world = try await Self.world()
        let listed = try rolesCommand(["list"], on: world.harness.endpoint)
        #expect(listed.succeeded && listed.output.contains("Moderator: moderator") && listed.output.contains("Editor: editor"), "\(listed.output)")
        let unknown = try rolesCommand(["add", "Janitor", "editor"], on: world.harness.endpoint)
        #expect(!unknown.succeeded && unknown.output.contains("CREATE ROLE Janitor"), "\(unknown.output)")
        try await world.harness.test { client in
            for (who, type) in [("creator", "Post"), ("creator", "Secret")] {
                _ = try await modify(client, as: world.token(who), save: [["recordName": "\(type.lowercased())-r", "recordType": type, "fields": ["title": "t"]]])
            }
        }
        let sql = "select record_name from canopy.records order by 1"
        let anonymous = try CanopyBinary.run(["psql", "--anonymous", "--database-url", world.harness.endpoint.url, "--", "-Atc", sql])
        #expect(anonymous.succeeded && anonymous.output.split(separator: "\n").map(String.init) == ["post-r"], "\(anonymous.output)")
        let creator = try CanopyBinary.run(["psql", "--as", "creator", "--database-url", world.harness.endpoint.url, "--", "-Atc", sql])
        #expect(creator.succeeded && creator.output.split(separator: "\n").map(String.init) == ["post-r", "secret-r"], "\(creator.output)")
        let both = try CanopyBinary.run(["psql", "--anonymous", "--as", "creator", "--database-url", world.harness.endpoint.url])
        #expect(!both.succeeded && both.output.contains("exactly one of --as USER and --anonymous"), "\(both.output)")
    }
}

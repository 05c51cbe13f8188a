@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyAssets
import CanopyGateway
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Backup and restore (issue 20, part 5): `canopy backup` from a database
/// in use, `canopy restore` into a new embedded cluster, then the gateway
/// on the restored cluster serves the same records, assets, shares and
/// permissions, and every change token from before the restore is
/// CHANGE_TOKEN_EXPIRED, never a position that silently skips.
@Suite("Backup and restore", .serialized)
struct BackupRestoreTests {
    let downloads = AssetDownloads()

    /// The Fast records of zone Z as alice reads them: name, change tag and fields.
    func fasts(_ client: any TestClientProtocol, token: String) async throws -> [String] {
        let answer = try await client.call("records", """
            { records(scope: PRIVATE, zone: {zoneName: "Z"}, recordType: "Fast", sort: [{field: "recordName"}]) {
                records { recordName recordChangeTag fields } } }
            """, token: token)
        let records = answer.object["records"] as? [[String: Any]] ?? []
        #expect(!records.isEmpty, "\(answer.body)")
        return try records.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: .sortedKeys), as: UTF8.self) }
    }

    struct Before: Sendable {
        var fasts: [String]
        var digest: String
        /// Change tokens issued before the backup, and one issued after it
        /// (past the last position the backup holds).
        var aliceZone: String
        var aliceDatabase: String
        var bobDatabase: String
        var bobZone: String
        var aliceZoneAfterBackup: String
    }

    @Test("backup while serving, restore into a new cluster: same records, assets, shares and permissions; every older change token is CHANGE_TOKEN_EXPIRED; the target must be empty; a damaged backup is refused")
    func roundTrip() async throws {
        let (harness, configuration, assetDirectory) = try await GatewayHarness.withAssets()
        let (_, carolToken) = try await addUser("carol", on: harness.endpoint)
        let scratch = "/tmp/canopy-backup-\(UUID().uuidString.prefix(8))"
        let backup = "\(scratch)/backup", restoredData = "\(scratch)/restored"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(at: assetDirectory)
            _ = try? CanopyBinary.run(["cluster", "stop", "--data-dir", restoredData])
            try? FileManager.default.removeItem(atPath: scratch)
        }

        let before: Before = try await harness.test(configuration: configuration, live: true) { client in
            let digest = try await downloads.seed(client, harness)
            _ = try await save(client, token: harness.aliceToken, zone: "Z", (1...5).map { fast("f\($0)", hours: 10 + $0, end: 1_700_000_000_000 + Int64($0)) })
            let aliceZone = try #require(try await client.zoneChanges("Z", since: nil, token: harness.aliceToken).0?.token)
            let aliceDatabase = try await client.databaseChanges(scope: "PRIVATE", since: nil, token: harness.aliceToken).token
            let bobDatabase = try await client.databaseChanges(scope: "SHARED", since: nil, token: harness.bobToken).token
            let bobZone = try #require(try await client.zoneChanges("Z", scope: "SHARED", owner: harness.alice.userRecordName, since: nil,
                                                                    token: harness.bobToken).0?.token)
            let fasts = try await fasts(client, token: harness.aliceToken)

            let written = try CanopyBinary.run(["backup", backup, "--database-url", harness.endpoint.url, "--asset-dir", assetDirectory.path])
            #expect(written.succeeded, "canopy backup: \(written.output)")
            print("canopy backup:\n\(written.output)")

            // Written after the backup, one at a time: not in it, and the
            // token that reports them points well past its last position.
            for index in 1...5 {
                _ = try await save(client, token: harness.aliceToken, zone: "Z", [fast("late\(index)", hours: index, end: 1_700_000_000_100)])
            }
            let after = try #require(try await client.zoneChanges("Z", since: aliceZone, token: harness.aliceToken).0)
            #expect(after.changed == (1...5).map { "late\($0)" })
            return Before(fasts: fasts, digest: digest, aliceZone: aliceZone, aliceDatabase: aliceDatabase, bobDatabase: bobDatabase,
                          bobZone: bobZone, aliceZoneAfterBackup: after.token)
        }

        // A backup directory is never overwritten.
        let again = try CanopyBinary.run(["backup", backup, "--database-url", harness.endpoint.url, "--asset-dir", assetDirectory.path])
        #expect(!again.succeeded && again.output.contains("already exists"), "\(again.output)")

        let restoredAssets = "\(restoredData)/assets"
        let restored = try CanopyBinary.run([
            "restore", backup, "--data-dir", restoredData, "--asset-dir", restoredAssets,
            "--migrations-dir", TestDatabase.migrationsDirectory,
        ])
        #expect(restored.succeeded, "canopy restore: \(restored.output)")
        print("canopy restore:\n\(restored.output)")
        try #require(restored.succeeded)

        let running = try await EmbeddedCluster(dataDirectory: restoredData).start(logger: TestDatabase.logger)
        let target = GatewayHarness(endpoint: running.adminEndpoint, alice: harness.alice, aliceToken: harness.aliceToken,
                                    bob: harness.bob, bobToken: harness.bobToken)
        var restoredConfiguration = configuration
        restoredConfiguration.assets = AssetSettings(store: try await FileAssetStore(directory: restoredAssets))
        try await target.test(configuration: restoredConfiguration, live: true) { client in
            // The same records, byte for byte, and not the one written after the backup.
            #expect(try await fasts(client, token: harness.aliceToken) == before.fasts)
            let late = try await client.call("lookup", "{ lookup(scope: PRIVATE, zone: {zoneName: \"Z\"}, recordNames: [\"late1\"]) { record { recordName } error { code } } }",
                                             token: harness.aliceToken)
            #expect("\(late.body)".contains("UNKNOWN_ITEM"), "\(late.body)")

            // The asset's bytes, from the restored store, for the owner and the participant.
            let asset = try #require(try await downloads.read(client, target, token: harness.aliceToken))
            #expect(asset["sha256"] as? String == before.digest)
            let url = try #require(asset["downloadURL"] as? String)
            #expect(try await downloads.get(client, downloads.path(url)).body == AssetDownloads.text)
            let bobs = try #require(try await downloads.read(client, target, token: harness.bobToken, shared: true)?["downloadURL"] as? String)
            #expect(try await downloads.get(client, downloads.path(bobs)).body == AssetDownloads.text)

            // Permissions: Bob still READ_ONLY, Carol still nothing.
            let bobWrite = try await client.call("modifyRecords", """
                mutation($s: [RecordInput!]) { modifyRecords(scope: SHARED, zone: {zoneName: "Z", ownerName: "\(harness.alice.userRecordName)"}, save: $s) {
                  saved { recordName } errors { code } } }
                """, ["s": [fast("by-bob", hours: 2, end: 1_700_000_000_200)]], token: harness.bobToken)
            #expect("\(bobWrite.body)".contains("PERMISSION_FAILURE"), "\(bobWrite.body)")
            let carol = try await client.call("lookup", """
                { lookup(scope: SHARED, zone: {zoneName: "Z", ownerName: "\(harness.alice.userRecordName)"}, recordNames: ["doc"]) { record { recordName } } }
                """, token: carolToken.string)
            #expect(carol.code == "ZONE_NOT_FOUND", "\(carol.body)")
            let shared = try await client.databaseChanges(scope: "SHARED", since: nil, token: harness.bobToken)
            #expect(shared.changed == ["Z"], "\(shared.answer.body)")

            // A record written after the restore draws a position at or
            // below the one the after-backup token holds: that token must
            // not be taken as "nothing new".
            _ = try await save(client, token: harness.aliceToken, zone: "Z", [fast("fresh", hours: 3, end: 1_700_000_000_300)])
            for (name, token) in [("alice's zone token", before.aliceZone), ("alice's zone token issued after the backup", before.aliceZoneAfterBackup)] {
                let (page, answer) = try await client.zoneChanges("Z", since: token, token: harness.aliceToken)
                #expect(page == nil && answer.code == "CHANGE_TOKEN_EXPIRED", "\(name): \(answer.body)")
            }
            let (bobPage, bobAnswer) = try await client.zoneChanges("Z", scope: "SHARED", owner: harness.alice.userRecordName, since: before.bobZone, token: harness.bobToken)
            #expect(bobPage == nil && bobAnswer.code == "CHANGE_TOKEN_EXPIRED", "\(bobAnswer.body)")
            for (name, scope, token, user) in [("alice's", "PRIVATE", before.aliceDatabase, harness.aliceToken), ("bob's", "SHARED", before.bobDatabase, harness.bobToken)] {
                let answer = try await client.databaseChanges(scope: scope, since: token, token: user).answer
                #expect(answer.code == "CHANGE_TOKEN_EXPIRED", "\(name) database token: \(answer.body)")
                #expect(answer.message.contains("restored"), "\(answer.message)")
            }

            // From null the feed is whole, and its new tokens work.
            let whole = try #require(try await client.zoneChanges("Z", since: nil, token: harness.aliceToken).0)
            #expect(Set(whole.changed) == ["doc", "f1", "f2", "f3", "f4", "f5", "fresh"], "\(whole.changed)")
            _ = try await save(client, token: harness.aliceToken, zone: "Z", [fast("newer", hours: 4, end: 1_700_000_000_400)])
            let next = try #require(try await client.zoneChanges("Z", since: whole.token, token: harness.aliceToken).0)
            #expect(next.changed == ["newer"])
        }

        // A database that already holds Canopy is refused, and left as it was.
        let over = try CanopyBinary.run(["restore", backup, "--data-dir", restoredData, "--asset-dir", restoredAssets,
                                         "--migrations-dir", TestDatabase.migrationsDirectory])
        #expect(!over.succeeded && over.output.contains("already has a canopy schema"), "\(over.output)")

        // A damaged dump is found before anything is touched.
        let damaged = "\(scratch)/damaged"
        try FileManager.default.copyItem(atPath: backup, toPath: damaged)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: "\(damaged)/canopy.dump"))
        bytes[bytes.count / 2] ^= 0xff
        try bytes.write(to: URL(fileURLWithPath: "\(damaged)/canopy.dump"))
        let checked = try CanopyBinary.run(["restore", damaged, "--check"])
        #expect(!checked.succeeded && checked.output.contains("is damaged"), "\(checked.output)")
        let whole = try CanopyBinary.run(["restore", backup, "--check"])
        #expect(whole.succeeded && whole.output.contains("a whole backup"), "\(whole.output)")
    }
}

@testable import CanopyGatewayTestSupport
import CanopyAdmin
import CanopyAssets
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import NIOCore
import PostgresNIO
import Testing

/// `canopy assets collect` as an operator runs it, on a real directory and
/// database: it removes bytes nothing references once the grace period is
/// over, never bytes a live upload holds, and says what it freed.
@Suite("canopy assets collect", .enabled(if: CanopyBinary.exists, "build the canopy executable first (swift build)"))
struct AssetCollectTests {
    func put(_ store: FileAssetStore, _ text: String) async throws -> StoredAsset {
        try await store.store(AsyncStream { $0.yield(ByteBuffer(string: text)); $0.finish() }, limit: 1 << 20)
    }

    func age(_ path: String, hours: Double) throws {
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-hours * 3600)], ofItemAtPath: path)
    }

    @Test("removes unreferenced bytes and unfinished uploads past the grace period; keeps records' assets, live uploads' bytes and recent ones")
    func collect() async throws {
        let endpoint = try await TestDatabase.shared.migratedDatabase()
        let (alice, _) = try await addUser("alice", on: endpoint)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-collect-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await FileAssetStore(directory: directory)
        let live = try await put(store, "held by a live upload")
        let expired = try await put(store, "held by an expired upload")
        let recent = try await put(store, "nobody's, but new")
        let old = try await put(store, "nobody's, and old")
        let attached = try await put(store, "held by a record")
        func blob(_ asset: StoredAsset) -> String { "\(directory)/blobs/\(asset.digest.hex.prefix(2))/\(asset.digest.hex)" }
        for asset in [live, expired, old, attached] { try age(blob(asset), hours: 2) }
        try Data([1]).write(to: URL(fileURLWithPath: "\(directory)/incoming/stale.part"))
        try age("\(directory)/incoming/stale.part", hours: 2)
        try Data([2]).write(to: URL(fileURLWithPath: "\(directory)/incoming/fresh.part"))
        try await TestDatabase.withConnection(endpoint) { connection in
            _ = try await connection.texts(PostgresQuery(unsafeSQL: """
                INSERT INTO canopy.uploads (user_id, token_hash, sha256, size, content_type, expires_at) VALUES
                    (\(alice.id), sha256('a'), '\(live.digest.hex)', \(live.size), 'text/plain', now() + interval '20 hours'),
                    (\(alice.id), sha256('b'), '\(expired.digest.hex)', \(expired.size), 'text/plain', now() - interval '1 hour')
                """))
            // A record holding an asset in a list (its upload used long ago), loaded with triggers off.
            _ = try await connection.texts("BEGIN")
            _ = try await connection.texts("SET LOCAL session_replication_role = replica")
            _ = try await connection.texts(PostgresQuery(unsafeSQL: """
                INSERT INTO canopy.records (zone_id, owner_id, record_name, record_type, fields, created_by, modified_by, change_seq, change_tag)
                SELECT id, owner_id, 'folder', 'Folder', '{"pages": [{"type": "ASSET", "sha256": "\(attached.digest.hex)", "size": \(attached.size), "contentType": "text/plain"}]}',
                       \(alice.id), \(alice.id), 1, '1'
                  FROM canopy.zones WHERE owner_id = \(alice.id)
                """))
            _ = try await connection.texts("COMMIT")
        }
        let arguments = ["assets", "collect", "--asset-dir", directory, "--grace-hours", "1",
                         "--database-url", endpoint.url, "--migrations-dir", TestDatabase.migrationsDirectory]

        let dry = try CanopyBinary.run(arguments + ["--dry-run"])
        #expect(dry.succeeded, "\(dry.output)")
        #expect(dry.output.contains("would remove \(expired.digest) (\(expired.size) bytes)"), "\(dry.output)")
        #expect(dry.output.contains("would remove \(old.digest)"), "\(dry.output)")
        #expect(dry.output.contains("would remove unfinished upload incoming/stale.part"), "\(dry.output)")
        #expect(try await store.size(of: old.digest) != nil, "a dry run removes nothing")

        let real = try CanopyBinary.run(arguments)
        #expect(real.succeeded, "\(real.output)")
        #expect(real.output.contains("removed 2 unreferenced (\(expired.size + old.size) bytes) and 1 unfinished; kept 2 referenced and 1 within 1.0 h"),
                "\(real.output)")
        #expect(try await store.size(of: live.digest) == live.size)
        #expect(try await store.size(of: attached.digest) == attached.size, "a record's asset is never collected")
        #expect(try await store.size(of: recent.digest) == recent.size)
        #expect(try await store.size(of: expired.digest) == nil)
        #expect(try await store.size(of: old.digest) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(directory)/incoming") == ["fresh.part"])

        // Uploaded again, old bytes start a new grace period.
        let again = try await put(store, "nobody's, and old")
        #expect(again == old)
        try age(blob(live), hours: 2)
        let after = try CanopyBinary.run(arguments)
        #expect(after.output.contains("removed 0 unreferenced"), "\(after.output)")
    }
}

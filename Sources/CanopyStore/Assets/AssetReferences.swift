import Logging
import PostgresNIO

/// The SHA-256 digests the database still needs the bytes of, read over an
/// administrator's connection (every user's rows): live uploads (not used,
/// not expired). When records hold assets, their digests join this set.
public enum AssetReferences {
    public static func digests(connection: PostgresConnection, logger: Logger) async throws -> Set<String> {
        var digests = Set<String>()
        let rows = try await connection.query(
            "SELECT DISTINCT sha256 FROM canopy.uploads WHERE used_at IS NULL AND expires_at > now()", logger: logger
        )
        for try await digest in rows.decode(String.self) { digests.insert(digest) }
        return digests
    }
}

import Logging
import PostgresNIO

/// The SHA-256 digests the database still needs the bytes of, read over an
/// administrator's connection (every user's rows): live uploads (not used,
/// not expired) and every asset a record holds. Reading the records is a
/// scan of the table (each row's fields through a JSON path), fine for an
/// hourly collection; a table of records' assets kept by trigger is the
/// way to make it an index scan when tables grow large.
public enum AssetReferences {
    public static func digests(connection: PostgresConnection, logger: Logger) async throws -> Set<String> {
        var digests = Set<String>()
        let rows = try await connection.query("""
            SELECT sha256 FROM canopy.uploads WHERE used_at IS NULL AND expires_at > now()
            UNION
            SELECT a->>'sha256' FROM canopy.records r, jsonb_path_query(r.fields, 'lax $.*.** ? (@.type == "ASSET")') a
             WHERE r.fields @? 'lax $.*.** ? (@.type == "ASSET")'
            """, logger: logger)
        for try await digest in rows.decode(String.self) { digests.insert(digest) }
        return digests
    }
}

import Foundation
import Logging
import PostgresNIO

/// An upload about to be recorded: its bytes are in the asset store under
/// `sha256`; the client gets the token, the database keeps its hash.
public struct NewUpload: Sendable {
    public var tokenHash: [UInt8]
    public var sha256: String
    public var size: Int64
    public var contentType: String

    public init(tokenHash: [UInt8], sha256: String, size: Int64, contentType: String) {
        self.tokenHash = tokenHash
        self.sha256 = sha256
        self.size = size
        self.contentType = contentType
    }
}

extension RequestDatabase {
    /// Records `upload` as `userID`'s (row-level security checks it is) and
    /// returns when its token expires.
    public func recordUpload(_ upload: NewUpload, as userID: Int64, logger: Logger) async throws -> Date {
        try await withUser(userID, changesZones: false, logger: logger) { connection in
            let rows = try await connection.query("""
                INSERT INTO canopy.uploads (token_hash, sha256, size, content_type)
                VALUES (\(ByteBuffer(bytes: upload.tokenHash)), \(upload.sha256), \(upload.size), \(upload.contentType))
                RETURNING expires_at
                """, logger: logger)
            for try await expires in rows.decode(Date.self) { return expires }
            throw StoreError(.query, "recording an upload returned nothing")
        }
    }
}

extension RequestDatabase {
    /// What `userID` uses (stored and pending uploads) and their quota (nil:
    /// none), to refuse an upload whose length is known before its bytes
    /// are read. The database's own check, when the upload is recorded,
    /// is the one that holds under concurrency.
    public func storageRoom(of userID: Int64, logger: Logger) async throws -> (used: Int64, quota: Int64?) {
        try await withUser(userID, logger: logger) { connection in
            let rows = try await connection.query(
                "SELECT field_bytes + asset_bytes + pending_upload_bytes, quota_bytes FROM canopy.my_storage()", logger: logger
            )
            for try await (used, quota) in rows.decode((Int64, Int64?).self) { return (used, quota) }
            return (0, nil)
        }
    }
}

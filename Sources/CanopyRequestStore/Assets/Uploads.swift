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
        try await withUser(userID, logger: logger) { connection in
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

import Crypto
import Foundation

/// A secret key for signing what the server hands out and must recognise
/// later (cursors, change tokens). Plain bytes, so it can cross tasks.
public struct SigningKey: Sendable, Equatable {
    public let bytes: Data
    /// Keys this one replaced (`canopy restore` retires the change-token
    /// key): what they signed is the server's own but from before, which
    /// a feed answers with CHANGE_TOKEN_EXPIRED rather than INVALID_ARGUMENTS.
    public let retired: [Data]

    public init(_ bytes: Data, retired: [Data] = []) {
        self.bytes = bytes
        self.retired = retired
    }

    var symmetricKey: SymmetricKey { SymmetricKey(data: bytes) }
}

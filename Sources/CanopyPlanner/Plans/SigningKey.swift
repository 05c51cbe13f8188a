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
    /// Keys rotated out but inside their overlap window (`canopy secrets
    /// rotate`): what they signed is accepted as if signed by `bytes`.
    public let accepted: [Data]

    public init(_ bytes: Data, accepted: [Data] = [], retired: [Data] = []) {
        self.bytes = bytes
        self.accepted = accepted
        self.retired = retired
    }

    var symmetricKey: SymmetricKey { SymmetricKey(data: bytes) }

    /// The current key, then the accepted ones: the keys a value may be
    /// verified with.
    var verifyingKeys: [SymmetricKey] { [symmetricKey] + accepted.map { SymmetricKey(data: $0) } }
}

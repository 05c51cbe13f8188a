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

    /// The current key as CryptoKit takes it, made once (it was made anew
    /// for every cursor signed and checked: issue 51).
    let symmetricKey: SymmetricKey
    /// The current key, then the accepted ones: the keys a value may be
    /// verified with.
    let verifyingKeys: [SymmetricKey]

    public init(_ bytes: Data, accepted: [Data] = [], retired: [Data] = []) {
        self.bytes = bytes
        self.accepted = accepted
        self.retired = retired
        symmetricKey = SymmetricKey(data: bytes)
        verifyingKeys = [symmetricKey] + accepted.map { SymmetricKey(data: $0) }
    }

    public static func == (left: SigningKey, right: SigningKey) -> Bool {
        left.bytes == right.bytes && left.retired == right.retired && left.accepted == right.accepted
    }
}

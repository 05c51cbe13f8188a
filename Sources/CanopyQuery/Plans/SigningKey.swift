import Crypto
import Foundation

/// A secret key for signing what the server hands out and must recognise
/// later (cursors, change tokens). Plain bytes, so it can cross tasks.
public struct SigningKey: Sendable, Equatable {
    public let bytes: Data

    public init(_ bytes: Data) {
        self.bytes = bytes
    }

    var symmetricKey: SymmetricKey { SymmetricKey(data: bytes) }
}

/// Everything that can go wrong in this module, in two kinds: a
/// configuration that cannot work (it stops `canopy serve` at start) and a
/// token that is refused (the gateway answers 401 `NOT_AUTHENTICATED`).
///
/// A refusal's message names the check that failed and never contains the
/// token or a key.
public struct IdentityError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The auth configuration file, a provider in it, or its key set.
        case configuration
        /// A presented token failed a check.
        case refused
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    static func refused(_ message: String) -> IdentityError {
        IdentityError(.refused, message)
    }

    public var description: String { message }
}

/// A value from a token or a key set, safe to put in a message: at most 80
/// characters, control characters replaced.
func quoted(_ value: String) -> String {
    let cleaned = String(value.unicodeScalars.prefix(80).map { $0.properties.generalCategory == .control ? "?" : Character($0) })
    return "'\(cleaned)\(value.unicodeScalars.count > 80 ? "…" : "")'"
}

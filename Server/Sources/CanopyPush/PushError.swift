/// A fault of the push module: settings that cannot work (an unreadable
/// APNs key) or a push service's refusal. One type for the module; the
/// command line prints it, the deliverer logs it and retries.
public struct PushError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// A setting is wrong (`canopy serve` stops with this message).
        case invalidConfiguration
        /// A push service answered with a failure, or could not be reached.
        case delivery
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

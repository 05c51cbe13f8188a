/// Why a user-supplied URL may not be called: the one error type of
/// `CanopyOutbound`. Its message names the URL's host and what it resolved
/// to, never its path or query (where a webhook's own secret may sit).
public struct OutboundError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Not an absolute http(s) URL with a host, or with a user name in it.
        case malformedURL
        /// http to a destination the operator did not allow.
        case schemeRefused
        /// A port other than the allowed ones (443 by default).
        case portRefused
        /// The host is, or resolves to, an address inside the operator's network.
        case addressRefused
        /// The name does not resolve (so it cannot be checked).
        case unresolvable
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

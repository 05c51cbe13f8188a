/// A gateway configuration that cannot work (a CORS origin, the console's
/// files), found when `canopy serve` starts: the message names the flag or
/// file and what is wrong.
public struct GatewayConfigurationError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

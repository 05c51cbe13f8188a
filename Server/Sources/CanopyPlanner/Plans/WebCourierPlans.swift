import Foundation
import PostgresNIO

/// Web Services' web courier (issue 66): the statements `tokens/create`
/// and `tokens/register` run as the caller. A courier is a device of kind
/// COURIER named by the SHA-256 of its token (migrations/0036); the page's
/// long poll takes its notifications without a person
/// (`RequestDatabase.courierTake`).
public enum WebCourierPlans {
    /// `tokens/create`: makes the caller a courier for the token whose
    /// SHA-256 is `tokenHash`; the statement answers its device id.
    public static func register(tokenHash: Data) -> SQLStatement {
        var builder = SQLBuilder()
        builder.append("SELECT canopy.register_courier(\(builder.bind(ByteBuffer(bytes: tokenHash))))::text")
        return builder.query
    }

    /// `tokens/register` of a token `tokens/create` made: the caller's
    /// courier of that token, or a NULL row.
    public static func ofCaller(tokenHash: Data) -> SQLStatement {
        var builder = SQLBuilder()
        builder.append("SELECT canopy.courier_of_caller(\(builder.bind(ByteBuffer(bytes: tokenHash))))::text")
        return builder.query
    }
}

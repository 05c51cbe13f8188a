/// SQLSTATEs that mean something to a client: those Canopy's own functions
/// and triggers raise (class CN, see sql/README.md) and PostgreSQL's own.
/// The one place a SQLSTATE becomes an API code.
extension ErrorCode {
    /// The code for a SQLSTATE, and the message to show instead of the
    /// server's when the server's would say too much or too little; nil
    /// for a SQLSTATE no client should see (an internal error).
    public static func forSQLState(_ sqlState: String) -> (code: ErrorCode, message: String?)? {
        switch sqlState {
        case "CN001": return (.referenceViolation, nil)
        case "CN002": return (.alreadyShared, nil)
        case "23P01": return (.alreadyShared, "the zone already has a share of the other kind")
        case "CN003": return (.limitExceeded, nil)
        case "CN004", "23514", "22P02": return (.invalidArguments, nil)
        case "CN005": return (.permissionFailure, nil)
        case "42501": return (.permissionFailure, "permission denied")
        case "CN006": return (.unknownItem, nil)
        case "57014": return (.limitExceeded, "the request ran longer than the statement timeout")
        case "40P01", "40001": return (.serviceUnavailable, "the request collided with a concurrent one; try again")
        default: return nil
        }
    }
}

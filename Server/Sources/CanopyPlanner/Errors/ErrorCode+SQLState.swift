/// SQLSTATEs that mean something to a client: those Canopy's own functions
/// and triggers raise (class CN, see sql/README.md) and PostgreSQL's own.
/// The one place a SQLSTATE becomes an API code.
///
/// Issue 48: every class a request can reach is mapped, so a client's
/// input never becomes an `INTERNAL_ERROR` (which is kept for the server's
/// own faults: a missing function or column, a broken invariant, CN000).
/// The classes, with why (docs/SECURITY.md, "SQLSTATEs"):
/// - 08 connection, 25 transaction state (a write reaching a server that
///   became a standby), 40 rollback (deadlock, serialization), 53
///   insufficient resources, 55 object state (a lock not available), 57P
///   shutdown, 58 system I/O: SERVICE_UNAVAILABLE, ask again
/// - 22 data exception (U+0000 in text or JSON, a value out of range, a
///   string too long, a bad date): INVALID_ARGUMENTS
/// - 23 integrity: 23503 REFERENCE_VIOLATION, 23505 PERMISSION_FAILURE (a
///   name taken by a record the caller cannot see, as modifyRecords says),
///   23P01 ALREADY_SHARED, the rest INVALID_ARGUMENTS
/// - 42501 PERMISSION_FAILURE; 54 program limit (a statement too complex)
///   and 57014 (the statement timeout) LIMIT_EXCEEDED
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
        case "CN004", "22P02": return (.invalidArguments, nil)
        // PostgreSQL's own message names the table and the constraint.
        case "23514": return (.invalidArguments, "a value is outside what the data model allows (a name, a size or a count past its bound)")
        case "CN005": return (.permissionFailure, nil)
        case "42501": return (.permissionFailure, "permission denied")
        case "CN006": return (.unknownItem, nil)
        case "CN007": return (.quotaExceeded, nil)
        case "57014": return (.limitExceeded, "the request ran longer than the statement timeout")
        case "40P01", "40001": return (.serviceUnavailable, "the request collided with a concurrent one; try again")
        case "22021", "22P05": return (.invalidArguments, "text may not hold the character U+0000 (NUL)")
        case "22001": return (.invalidArguments, "a value is longer than its limit")
        case "23503": return (.referenceViolation, "a reference names something that does not exist")
        case "23505": return (.permissionFailure, "you may not use that name here")
        case "23502": return (.invalidArguments, "a required value is missing")
        case "55P03", "55006": return (.serviceUnavailable, "a record or zone is busy; try again")
        case "57P01", "57P02", "57P03", "57P04", "57P05": return (.serviceUnavailable, "the database is restarting; try again shortly")
        default: break
        }
        switch sqlState.prefix(2) {
        case "22": return (.invalidArguments, "a value is not valid here (out of range or malformed)")
        case "23": return (.invalidArguments, "the change breaks a rule of the data model")
        case "08", "25", "40", "53", "58": return (.serviceUnavailable, "the database cannot answer now; try again shortly")
        case "54": return (.limitExceeded, "the request is too large or too complex for the database")
        default: return nil
        }
    }

    /// The SQLSTATE classes (first two characters) that `forSQLState`
    /// maps whole, beyond its single codes: pinned by a test.
    public static let mappedSQLStateClasses: Set<String> = ["08", "22", "23", "25", "40", "53", "54", "58"]
}

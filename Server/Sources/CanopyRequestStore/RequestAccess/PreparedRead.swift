import PostgresNIO

/// A read statement made ready once for many requests of one shape: its
/// text wrapped to act for the caller (the user a parameter after the
/// statement's own), the parameters' types, and its prepared-statement
/// number (``StatementShapes``). The plan cache keeps one per entry, so a
/// request it serves neither builds the wrapping nor hashes the text to
/// find its prepared statement.
public struct PreparedRead: Sendable {
    /// The statement as sent: the identity wrapper around the read.
    public let sql: String
    /// The read's parameter types, then the user's (int8, NULL for nobody),
    /// which the read may name too (``SQLBuilder/caller()``).
    public let parameterTypes: [PostgresDataType]
    let number: Number
    /// The read alone and its parameters' types: what runs on Citus, after
    /// `canopy.act_as` in the same transaction (``DatabaseEngine``).
    let read: String
    let readTypes: [PostgresDataType]

    enum Number: Sendable {
        /// Not looked up yet: found by the text when run.
        case unknown
        case numbered(Int)
        /// All numbers were given: runs unnamed.
        case unnumbered
    }

    /// `numbered`: find the shape's number now (kept for every run).
    public init(sql read: String, parameterTypes readTypes: [PostgresDataType], numbered: Bool = true) {
        let user = readTypes.count + 1
        self.read = read
        self.readTypes = readTypes
        sql = """
            SELECT canopy_q.* FROM (SELECT set_config('canopy.user_id', coalesce($\(user)::text, ''), true) AS canopy_identity OFFSET 0) canopy_s \
            CROSS JOIN LATERAL (SELECT * FROM (\(read)) canopy_p WHERE canopy_s.canopy_identity IS NOT NULL) canopy_q
            """
        parameterTypes = readTypes + [.int8]
        if numbered {
            number = StatementShapes.shared.number(sql: sql, parameterTypes: parameterTypes).map(Number.numbered) ?? .unnumbered
        } else {
            number = .unknown
        }
    }
}

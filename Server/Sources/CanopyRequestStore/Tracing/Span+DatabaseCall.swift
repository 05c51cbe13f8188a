import Tracing

extension Span {
    /// What a database call's span says (docs/TRACING.md): the server
    /// (its URL without a password), primary or replica, and the
    /// deadlines it runs under. Never a statement's values or a user.
    public func describeDatabaseCall(
        server: String?, deadlines: (connection: Duration, answer: Duration), source: String = "primary"
    ) {
        updateAttributes { attributes in
            attributes["db.system.name"] = "postgresql"
            attributes["canopy.db.source"] = source
            if let server { attributes["canopy.db.server"] = server }
        }
        describeDeadlines(deadlines)
    }

    /// How long the work waits for a database connection, then its answer,
    /// before it is answered 503 (docs/API.md §13).
    public func describeDeadlines(_ deadlines: (connection: Duration, answer: Duration)) {
        updateAttributes { attributes in
            attributes["canopy.deadline.connection_ms"] = Int(deadlines.connection.milliseconds)
            attributes["canopy.deadline.answer_ms"] = Int(deadlines.answer.milliseconds)
        }
    }
}

extension Duration {
    /// Whole milliseconds, for attributes.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}

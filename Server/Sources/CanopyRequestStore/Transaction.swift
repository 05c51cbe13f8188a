import Logging
import PostgresNIO
import Synchronization

extension PostgresConnection {
    /// Runs `body` between BEGIN and COMMIT (ROLLBACK if it throws) and
    /// rethrows the original error, unwrapped, so callers can tell what failed.
    ///
    /// A task cancelled before its COMMIT (its caller answered at a
    /// deadline, or gone) rolls back instead; the ``CommitWatch`` in scope,
    /// if any, is marked first, so its owner knows whether a COMMIT may
    /// have reached the server.
    public func inTransaction<Result: Sendable>(
        logger: Logger,
        _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await query("BEGIN", logger: logger)
        let result: Result
        do {
            result = try await body(self)
            // Marked before the check: whoever cancels this task and then
            // reads the mark either sees it or has stopped the COMMIT.
            CommitWatch.current?.markCommitting()
            try Task.checkCancellation()
        } catch {
            _ = try? await query("ROLLBACK", logger: logger)
            throw error
        }
        try await query("COMMIT", logger: logger)
        return result
    }
}

/// Whether a transaction got as far as sending its COMMIT: if the answer
/// never comes (the link cut, the server frozen past the deadline, the
/// connection lost), the write may or may not have been applied, and the
/// client must be told that rather than "not applied" (docs/API.md §13, DECISIONS
/// 128). Bound as a task local around a write by whoever reports its outcome.
public final class CommitWatch: Sendable {
    @TaskLocal public static var current: CommitWatch?

    private let committing = Atomic<Bool>(false)

    public init() {}

    func markCommitting() { committing.store(true, ordering: .sequentiallyConsistent) }

    /// True once a COMMIT may have been sent.
    public var mayHaveCommitted: Bool { committing.load(ordering: .sequentiallyConsistent) }
}

/// Turns PostgresNIO's errors into words for people, without SQL text.
public enum PostgresErrors {
    public static func message(of error: any Error) -> String {
        if let psql = error as? PSQLError {
            if let message = psql.serverInfo?[.message] {
                var text = message
                if let detail = psql.serverInfo?[.detail] { text += " (\(detail))" }
                return text
            }
            if psql.code == .sslUnsupported {
                return "the server does not offer TLS, and the URL's sslmode requires it"
            }
            // A failure before any server message (refused, TLS handshake):
            // what NIO said is the only clue, e.g. CERTIFICATE_VERIFY_FAILED.
            if let underlying = psql.underlying { return "\(psql.code): \(underlying)" }
            return "\(psql.code)"
        }
        if let store = error as? StoreError { return store.message }
        if case .server(let server)? = error as? PostgresError, let message = server.fields[.message] {
            return message
        }
        return "\(error)"
    }

    /// The SQLSTATE of a server error, if it is one (from either of
    /// PostgresNIO's APIs: prepared reads go through the older one).
    public static func sqlState(of error: any Error) -> String? {
        if let psql = error as? PSQLError { return psql.serverInfo?[.sqlState] }
        if case .server(let server)? = error as? PostgresError { return server.fields[.sqlState] }
        return nil
    }

    /// True when the error means the server could not be reached at all.
    public static func isConnectionFailure(_ error: any Error) -> Bool {
        if let legacy = error as? PostgresError {
            if case .connectionClosed = legacy { return true }
            return false
        }
        if error is IOError || error is ChannelError { return true }
        guard let psql = error as? PSQLError else { return false }
        switch psql.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .poolClosed,
             .sslUnsupported, .failedToAddSSLHandler, .uncleanShutdown:
            return true
        default:
            return psql.serverInfo?[.sqlState]?.hasPrefix("08") == true
                || psql.serverInfo?[.sqlState] == "57P01" || psql.serverInfo?[.sqlState] == "57P03"
        }
    }
}

import CanopyAssets
import CanopyIdentity
import CanopyPlanner
import CanopyRequestStore
import Foundation
import Hummingbird
import Logging

/// An error as a client sees it: an API code, a message for people, and
/// where in the document it is. Every module's errors become one of these
/// here, in `init(_:requestID:logger:)`, and nowhere else. Thrown from a
/// route, it is the response (``HTTPResponseError``): `{"errors": [...]}`
/// with its HTTP status.
public struct APIError: Error, Sendable {
    public var code: ErrorCode
    public var message: String
    public var locations: [QueryError.Location]
    public var path: [String]
    /// Seconds a client should wait before asking again (`Retry-After`),
    /// for a limit that passes with time.
    public var retryAfter: Int?
    /// The HTTP status when thrown from a route, where the code alone does
    /// not say it (429 for a rate, 413 for a body, 403 and 404 for downloads).
    public var statusOverride: HTTPResponse.Status?
    /// A write whose COMMIT was sent when the database stopped answering:
    /// it may or may not have been applied (`extensions.outcomeUnknown`;
    /// DECISIONS 128).
    public var outcomeUnknown = false

    public init(_ code: ErrorCode, _ message: String, locations: [QueryError.Location] = [], path: [String] = [],
                status: HTTPResponse.Status? = nil) {
        self.code = code
        self.message = message
        self.locations = locations
        self.path = path
        self.statusOverride = status
    }

    /// This error with the HTTP status it is answered with when thrown.
    func with(status: HTTPResponse.Status) -> APIError {
        var error = self
        error.statusOverride = status
        return error
    }

    /// Maps any error to its API code. Unexpected errors are logged with the
    /// request id and reach the client as INTERNAL_ERROR carrying only that id.
    public init(_ error: any Error, requestID: String, logger: Logger) {
        switch error {
        case let error as APIError:
            self = error
        case is CancellationError:
            // The client went away mid-request (a page navigated, a socket
            // closed) or the gateway is stopping: nobody reads this answer,
            // and it is no fault of the server's to log as one.
            logger.debug("request cancelled", metadata: ["canopy.request.id": "\(requestID)"])
            self.init(.serviceUnavailable, "the request was cancelled; try again")
        case let error as QueryError:
            self.init(error.code, error.message, locations: error.locations, path: error.path)
        case let error as AssetError:
            switch error.kind {
            case .tooLarge: self.init(.limitExceeded, error.message)
            case .storage: self = Self.internalError(error, requestID: requestID, logger: logger)
            }
        case let error as IdentityError where error.kind == .refused:
            self.init(.notAuthenticated, error.message)
        case let error as StoreError:
            switch error.code {
            case .notAuthenticated: self.init(.notAuthenticated, error.message)
            case .databaseUnavailable: self.init(.serviceUnavailable, "the database is unavailable; try again shortly")
            case .commitOutcomeUnknown:
                logger.warning("a write's outcome is unknown", metadata: ["canopy.request.id": "\(requestID)", "canopy.error": "\(String(reflecting: error))"])
                self.init(.serviceUnavailable, error.message)
                outcomeUnknown = true
            case .invalidInput: self.init(.invalidArguments, error.message)
            case .notFound: self.init(.unknownItem, error.message)
            default: self = Self.internalError(error, requestID: requestID, logger: logger)
            }
        default:
            if let sqlState = PostgresErrors.sqlState(of: error), let mapped = Self.fromSQLState(sqlState, error) {
                // The client gets the code (and, for a class, a fixed text);
                // the database's own words stay in the log, at debug since
                // they may quote a request's values.
                logger.debug("the database refused the request", metadata: [
                    "canopy.request.id": "\(requestID)", "canopy.sqlstate": "\(sqlState)",
                    "canopy.database.message": "\(PostgresErrors.message(of: error))",
                ])
                self = mapped
            } else if PostgresErrors.isConnectionFailure(error) {
                logger.error("database unreachable", metadata: ["canopy.error": "\(String(reflecting: error))"])
                self.init(.serviceUnavailable, "the database is unavailable; try again shortly")
            } else {
                self = Self.internalError(error, requestID: requestID, logger: logger)
            }
        }
    }

    /// A failure reported as data by a database function (`sqlstate` and
    /// `message`, as `canopy.modify_records` returns them).
    static func fromDatabase(sqlState: String, message: String, requestID: String, logger: Logger) -> APIError {
        struct ReportedError: Error, CustomStringConvertible {
            let sqlState: String
            let description: String
        }
        if let mapped = fromSQLState(sqlState, message: message) { return mapped }
        return internalError(ReportedError(sqlState: sqlState, description: message), requestID: requestID, logger: logger)
    }

    /// A PostgreSQL error whose SQLSTATE means something to a client.
    static func fromSQLState(_ sqlState: String, _ error: any Error) -> APIError? {
        fromSQLState(sqlState, message: PostgresErrors.message(of: error))
    }

    static func fromSQLState(_ sqlState: String, message: String) -> APIError? {
        guard let mapped = ErrorCode.forSQLState(sqlState) else { return nil }
        if mapped.code == .quotaExceeded { StorageMetrics.refusals.increment() }
        return APIError(mapped.code, mapped.message ?? message)
    }

    static func internalError(_ error: any Error, requestID: String, logger: Logger) -> APIError {
        logger.error("internal error", metadata: ["canopy.error": "\(String(reflecting: error))"])
        return APIError(.internalError, "internal error; quote request id \(requestID) when reporting it")
    }

    /// The HTTP status when it stops a request (``HTTPResponseError``).
    public var status: HTTPResponse.Status {
        if let statusOverride { return statusOverride }
        switch code {
        case .notAuthenticated: return .unauthorized
        case .serviceUnavailable: return .serviceUnavailable
        case .badRequest, .limitExceeded, .invalidArguments: return .badRequest
        case .quotaExceeded: return .contentTooLarge
        default: return .internalServerError
        }
    }
}

extension APIError: HTTPResponseError {
    /// `{"errors": [this]}` with the request's id (`X-Request-ID` is added by
    /// ``RequestIDMiddleware``), `Retry-After` where it applies.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let requestID = (context as? CanopyRequestContext)?.requestID ?? ""
        return GraphQLResponse.errors([self], requestID: requestID, status: status)
    }
}

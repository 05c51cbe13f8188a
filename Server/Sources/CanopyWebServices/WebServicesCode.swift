import CanopyPlanner

/// CloudKit Web Services' `serverErrorCode`s, each with the HTTP status a
/// whole request refused with it answers, and Canopy's own codes for what
/// the reference has no word for (docs/WEB_SERVICES.md, "Errors"). The one
/// place Canopy's ``ErrorCode``s become the reference's.
public enum WebServicesCode: String, Sendable, CaseIterable {
    case accessDenied = "ACCESS_DENIED"
    case atomicError = "ATOMIC_ERROR"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case authenticationRequired = "AUTHENTICATION_REQUIRED"
    case badRequest = "BAD_REQUEST"
    case conflict = "CONFLICT"
    case exists = "EXISTS"
    case internalError = "INTERNAL_ERROR"
    case notFound = "NOT_FOUND"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case throttled = "THROTTLED"
    case tryAgainLater = "TRY_AGAIN_LATER"
    case validatingReferenceError = "VALIDATING_REFERENCE_ERROR"
    case zoneNotFound = "ZONE_NOT_FOUND"
    // Canopy's own: cases the reference does not name.
    /// A change token from before the history kept (`--change-retention-days`),
    /// or from before the public database's grants changed: start again without one.
    case changeTokenExpired = "CHANGE_TOKEN_EXPIRED"
    /// A zone or record that already has a share.
    case alreadyShared = "ALREADY_SHARED"
    /// An operation the database in the path does not have (a custom zone in `public`).
    case badDatabase = "BAD_DATABASE"
    /// Too many items in one request, a request too large or too costly.
    case limitExceeded = "LIMIT_EXCEEDED"

    /// The HTTP status of a whole request refused with this code.
    public var statusCode: Int {
        switch self {
        case .badRequest, .atomicError, .badDatabase, .limitExceeded: return 400
        case .authenticationFailed: return 401
        case .accessDenied: return 403
        case .notFound, .zoneNotFound: return 404
        case .conflict, .exists, .alreadyShared: return 409
        case .changeTokenExpired: return 410
        case .validatingReferenceError: return 412
        case .quotaExceeded: return 413
        case .authenticationRequired: return 421
        case .throttled: return 429
        case .internalError: return 500
        case .tryAgainLater: return 503
        }
    }

    /// The reference's code for one of Canopy's, where the request did not
    /// say otherwise (a `create` that found the record says EXISTS, not
    /// CONFLICT: ``RecordsEndpoints``).
    /// - Parameter statusCode: the status the error already carries, where
    ///   one code means two things (LIMIT_EXCEEDED: 429 is a rate).
    public init(_ code: ErrorCode, statusCode: Int? = nil) {
        switch code {
        case .badRequest, .invalidArguments: self = .badRequest
        case .notAuthenticated: self = .authenticationFailed
        case .permissionFailure: self = .accessDenied
        case .zoneNotFound: self = .zoneNotFound
        case .unknownItem: self = .notFound
        case .serverRecordChanged: self = .conflict
        case .batchRequestFailed: self = .atomicError
        case .referenceViolation: self = .validatingReferenceError
        case .alreadyShared: self = .alreadyShared
        case .changeTokenExpired: self = .changeTokenExpired
        case .limitExceeded: self = statusCode == 429 ? .throttled : .limitExceeded
        case .serviceUnavailable: self = .tryAgainLater
        case .internalError: self = .internalError
        case .badDatabase: self = .badDatabase
        case .quotaExceeded: self = .quotaExceeded
        }
    }
}

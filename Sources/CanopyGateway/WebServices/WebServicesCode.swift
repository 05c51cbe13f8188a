import CanopyPlanner
import Hummingbird

/// CloudKit Web Services' `serverErrorCode`s, each with the HTTP status a
/// whole request refused with it answers, and Canopy's own codes for what
/// the reference has no word for (docs/WEB_SERVICES.md, "Errors"). The one
/// place Canopy's ``ErrorCode``s become the reference's.
enum WebServicesCode: String, Sendable, CaseIterable {
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

    /// The status of a whole request refused with this code.
    var status: HTTPResponse.Status {
        switch self {
        case .badRequest, .atomicError, .badDatabase, .limitExceeded: return .badRequest
        case .authenticationFailed: return .unauthorized
        case .accessDenied: return .forbidden
        case .notFound, .zoneNotFound: return .notFound
        case .conflict, .exists, .alreadyShared: return .conflict
        case .changeTokenExpired: return .gone
        case .validatingReferenceError: return .preconditionFailed
        case .quotaExceeded: return .contentTooLarge
        case .authenticationRequired: return .init(code: 421, reasonPhrase: "Misdirected Request")
        case .throttled: return .tooManyRequests
        case .internalError: return .internalServerError
        case .tryAgainLater: return .serviceUnavailable
        }
    }

    /// The reference's code for one of Canopy's, where the request did not
    /// say otherwise (a `create` that found the record says EXISTS, not
    /// CONFLICT: ``RecordsEndpoints``).
    init(_ code: ErrorCode, status: HTTPResponse.Status? = nil) {
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
        case .limitExceeded: self = status == .tooManyRequests ? .throttled : .limitExceeded
        case .serviceUnavailable: self = .tryAgainLater
        case .internalError: self = .internalError
        case .badDatabase: self = .badDatabase
        }
    }
}

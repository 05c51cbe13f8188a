/// The error codes of docs/API.md §6, as clients see them in `extensions.code`
/// and `RecordError.code`. The one set of codes: plans, the SQLSTATE
/// mapping and the gateway all use this type, and no code is spelled as a
/// literal anywhere else in Swift.
public enum ErrorCode: String, Sendable, Codable, CaseIterable {
    case badRequest = "BAD_REQUEST"
    case notAuthenticated = "NOT_AUTHENTICATED"
    case invalidArguments = "INVALID_ARGUMENTS"
    case permissionFailure = "PERMISSION_FAILURE"
    case zoneNotFound = "ZONE_NOT_FOUND"
    case unknownItem = "UNKNOWN_ITEM"
    case serverRecordChanged = "SERVER_RECORD_CHANGED"
    case batchRequestFailed = "BATCH_REQUEST_FAILED"
    case referenceViolation = "REFERENCE_VIOLATION"
    case alreadyShared = "ALREADY_SHARED"
    case changeTokenExpired = "CHANGE_TOKEN_EXPIRED"
    case limitExceeded = "LIMIT_EXCEEDED"
    case serviceUnavailable = "SERVICE_UNAVAILABLE"
    case internalError = "INTERNAL_ERROR"
    /// CloudKit's `badDatabase`: an operation the database named by
    /// `scope` does not have (a custom zone or a share in `PUBLIC`).
    case badDatabase = "BAD_DATABASE"
    /// CloudKit's `quotaExceeded`: the storage the change is charged to
    /// (the zone owner's; a public record's creator's) is full (issue 53).
    case quotaExceeded = "QUOTA_EXCEEDED"
}

import Foundation

/// Every failure CanopyKit reports, as `CKError` does: a code an app
/// switches on, the server's message, and what CloudKit hands along with
/// some codes (the server's record on a conflict, when to retry, the
/// per-item errors of a batch).
public struct CanopyError: Error, Sendable, CustomStringConvertible {
    /// CloudKit's error codes that Canopy can produce (docs/API.md §6), named as
    /// `CKError.Code`'s cases.
    public enum Code: String, Sendable, CaseIterable {
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
        /// CKError.badDatabase: not in this database (a custom zone or a share in the public one).
        case badDatabase = "BAD_DATABASE"
        /// CKError.quotaExceeded: the storage the change is charged to is full
        /// (yours, or a shared zone's owner's). Not retried: free space first.
        case quotaExceeded = "QUOTA_EXCEEDED"
        /// CKError.requestRateLimited: HTTP 429 from the rate limit; wait `retryAfterSeconds`.
        case requestRateLimited = "REQUEST_RATE_LIMITED"
        /// CKError.partialFailure: some items of a batch failed; see `partialErrors`.
        case partialFailure = "PARTIAL_FAILURE"
        /// CKError.networkFailure / networkUnavailable: the server could not be reached.
        case networkFailure = "NETWORK_FAILURE"
        /// An answer CanopyKit does not understand (a newer server, a proxy's page).
        case serverResponseLost = "SERVER_RESPONSE_LOST"
    }

    public let code: Code
    public let message: String
    /// With `.serverRecordChanged`: the record as the server has it now (CKError.serverRecord).
    public let serverRecord: Record?
    /// With `.serviceUnavailable` and `.requestRateLimited`: the server's `Retry-After`, in seconds (CKError.retryAfterSeconds).
    public let retryAfterSeconds: Double?
    /// With `.partialFailure`: each failed item's error, by record name (CKError.partialErrorsByItemID).
    public let partialErrors: [Record.ID: CanopyError]
    /// With `.serviceUnavailable`: the database stopped answering after the
    /// write's COMMIT was sent, so it may or may not have been saved (what
    /// CloudKit calls `serverResponseLost`). Send it again: a save with the
    /// old change tag is then answered `.serverRecordChanged` if it was saved.
    public let outcomeUnknown: Bool

    public init(_ code: Code, _ message: String, serverRecord: Record? = nil, retryAfterSeconds: Double? = nil,
                partialErrors: [Record.ID: CanopyError] = [:], outcomeUnknown: Bool = false) {
        self.code = code
        self.message = message
        self.serverRecord = serverRecord
        self.retryAfterSeconds = retryAfterSeconds
        self.partialErrors = partialErrors
        self.outcomeUnknown = outcomeUnknown
    }

    /// Codes worth trying again after a pause (CloudKit's `retryAfterSeconds` cases, plus a lost network).
    public var isRetryable: Bool {
        switch code {
        case .serviceUnavailable, .requestRateLimited, .networkFailure: return true
        default: return false
        }
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let retryAfterSeconds { text += " (retry after \(retryAfterSeconds) s)" }
        if outcomeUnknown { text += " (outcome unknown)" }
        return text
    }

    /// An error code the server sent, mapped to a `Code` (an unknown one is `serverResponseLost`).
    static func fromServer(code: String, message: String, serverRecord: Record? = nil, retryAfterSeconds: Double? = nil,
                           outcomeUnknown: Bool = false) -> CanopyError {
        CanopyError(Code(rawValue: code) ?? .serverResponseLost, message, serverRecord: serverRecord, retryAfterSeconds: retryAfterSeconds,
                    outcomeUnknown: outcomeUnknown)
    }
}

import CanopyWebServices
import Hummingbird
import Logging

/// A Web Services request refused: an ``APIError`` rendered as the
/// reference's error answer (`{uuid, serverErrorCode, reason,
/// redirectURL?, retryAfter?}` with the code's status), which it renders
/// itself wherever it is thrown (``HTTPResponseError``), as GraphQL's
/// `APIError` renders `{"errors": …}`. Made in one place from whatever a
/// request threw (``init(_:requestID:logger:)``).
struct WebServicesError: Error, HTTPResponseError {
    let error: APIError
    /// The reference's word when it is not the mapping's (421 for a missing web token).
    var code: WebServicesCode?
    /// Where to sign in, with a 421.
    var redirectURL: String?
    let requestID: String

    init(_ error: any Error, requestID: String, logger: Logger) {
        if let refused = error as? WebServicesError {
            self = refused
        } else if let signIn = error as? WebServicesController.SignInRequired {
            self.error = signIn.error
            self.code = .authenticationRequired
            self.redirectURL = signIn.redirectURL
            self.requestID = requestID
        } else {
            self.error = APIError(error, requestID: requestID, logger: logger)
            self.requestID = requestID
        }
    }

    var status: HTTPResponse.Status { response.status }

    var response: Response {
        WebServicesResponse.failure(error, code: code, requestID: requestID, redirectURL: redirectURL)
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }
}

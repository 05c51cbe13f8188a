import CanopyRequestStore
import CanopyPlanner
import CanopyWebServices
import HTTPTypes
import Hummingbird

/// Writes Web Services answers: a JSON object with HTTP 200, or a whole
/// request's error as the reference gives it (`{uuid, serverErrorCode,
/// reason, redirectURL?, retryAfter?}` with the code's status). The
/// per-item errors inside 200 answers are `WebServicesAnswer`'s.
enum WebServicesResponse {
    static func ok(_ body: [String: JSONValue]) -> Response {
        ok(WebServicesBody(body))
    }

    static func ok(_ body: WebServicesBody) -> Response {
        GraphQLResponse.json(body.text, status: .ok)
    }

    /// A whole request refused. `code` is the reference's word when the
    /// caller knows better than the mapping (421 for a missing web token).
    static func failure(
        _ error: APIError, code: WebServicesCode? = nil, requestID: String, redirectURL: String? = nil
    ) -> Response {
        let code = code ?? WebServicesCode(error.code, statusCode: error.statusOverride.map { Int($0.code) })
        CanopySpan.current?.attributes["canopy.error_code"] = error.code.rawValue
        var body: [String: JSONValue] = [
            "uuid": .string(requestID), "serverErrorCode": .string(code.rawValue), "reason": .string(error.message),
        ]
        if let redirectURL { body["redirectURL"] = .string(redirectURL) }
        if let seconds = error.retryAfter { body["retryAfter"] = .int(Int64(seconds)) }
        if error.outcomeUnknown { body["outcomeUnknown"] = .bool(true) }
        let status: HTTPResponse.Status = code == .limitExceeded && error.statusOverride == .contentTooLarge
            ? .contentTooLarge : .init(code: code.statusCode, reasonPhrase: code == .authenticationRequired ? "Misdirected Request" : "")
        var response = GraphQLResponse.json(JSONValue.object(body).jsonText, status: status)
        if let seconds = error.retryAfter { response.headers[.retryAfter] = String(seconds) }
        return response
    }
}

extension HTTPField.Name {
    /// Where a Web Services answer carries the web auth token to send next,
    /// as CloudKit's do (docs/WEB_SERVICES.md, "The web token rotates").
    static let cloudKitWebAuthToken = Self("X-Apple-CloudKit-Web-Auth-Token")!
}

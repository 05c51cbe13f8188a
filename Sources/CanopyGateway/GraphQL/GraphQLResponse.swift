import CanopyEncoding
import CanopyPlanner
import Foundation
import Hummingbird

/// Writes GraphQL responses. `data` arrives as JSON text that PostgreSQL
/// built; it is placed into the body as it is, never parsed again.
struct GraphQLResponse {
    struct ErrorBody: Encodable {
        struct Extensions: Encodable {
            var code: String
            var requestId: String
        }
        var message: String
        var locations: [QueryError.Location]?
        var path: [String]?
        var extensions: Extensions
    }

    static func errors(_ errors: [APIError], requestID: String, status: HTTPResponse.Status) -> Response {
        let body = "{\"errors\":\(encode(errors, requestID: requestID))}"
        var response = json(body, status: status)
        if let seconds = errors.first?.retryAfter {
            response.headers[.retryAfter] = String(seconds)
        }
        return response
    }

    /// `{"data": {key: json, ...}, "errors": [...]}`; a nil value is JSON null.
    static func data(_ entries: [(key: String, json: String?)], errors: [APIError], requestID: String) -> Response {
        var body = "{\"data\":{"
        for (index, entry) in entries.enumerated() {
            if index > 0 { body += "," }
            body += quoted(entry.key) + ":" + (entry.json ?? "null")
        }
        body += "}"
        if !errors.isEmpty {
            body += ",\"errors\":" + encode(errors, requestID: requestID)
        }
        body += "}"
        return json(body, status: .ok)
    }

    static func json(_ body: String, status: HTTPResponse.Status) -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if status == .serviceUnavailable {
            // The database is gone or a failover is under way: ask again in a second.
            headers[.retryAfter] = "1"
        }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    static func encode(_ errors: [APIError], requestID: String) -> String {
        let bodies = errors.map { error in
            ErrorBody(
                message: error.message,
                locations: error.locations.isEmpty ? nil : error.locations,
                path: error.path.isEmpty ? nil : error.path,
                extensions: .init(code: error.code.rawValue, requestId: requestID)
            )
        }
        let data = (try? JSONEncoder().encode(bodies)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func quoted(_ string: String) -> String {
        JSONString.quoted(string)
    }
}

import CanopyRequestStore
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
            /// Only when true: the write may or may not have been applied.
            var outcomeUnknown: Bool?
        }
        var message: String
        var locations: [QueryError.Location]?
        var path: [String]?
        var extensions: Extensions
    }

    static func errors(_ errors: [APIError], requestID: String, status: HTTPResponse.Status) -> Response {
        // Every refusal of a whole request is written here, thrown or not
        // (401, 413, 429, a cost refusal): its code goes on the request's
        // span (docs/TRACING.md; issue 64: it was set only for errors that
        // reached the tracing middleware, which none did).
        if let code = errors.first?.code { CanopySpan.current?.attributes["canopy.error_code"] = code.rawValue }
        let body = "{\"errors\":\(encode(errors, requestID: requestID))}"
        var response = json(body, status: status)
        if let seconds = errors.first?.retryAfter {
            response.headers[.retryAfter] = String(seconds)
        }
        return response
    }

    /// `{"data": {key: json, ...}, "errors": [...]}`; a nil value is JSON null.
    static func data(_ entries: [(key: String, json: String?)], errors: [APIError], requestID: String) -> Response {
        // Written once into the response's buffer: the answers are the
        // bulk of it, and each `+` copied them again.
        let keys = entries.map { quoted($0.key) }
        let errorText = errors.isEmpty ? nil : encode(errors, requestID: requestID)
        var size = 24 + (errorText?.utf8.count ?? 0)
        for (index, entry) in entries.enumerated() { size += keys[index].utf8.count + (entry.json?.utf8.count ?? 4) + 2 }
        var body = ByteBuffer()
        body.reserveCapacity(size)
        body.writeStaticString("{\"data\":{")
        for (index, entry) in entries.enumerated() {
            if index > 0 { body.writeStaticString(",") }
            body.writeString(keys[index])
            body.writeStaticString(":")
            if let json = entry.json { body.writeString(json) } else { body.writeStaticString("null") }
        }
        body.writeStaticString("}")
        if let errorText {
            body.writeStaticString(",\"errors\":")
            body.writeString(errorText)
        }
        body.writeStaticString("}")
        return json(body, status: .ok)
    }

    static func json(_ body: String, status: HTTPResponse.Status) -> Response {
        json(ByteBuffer(string: body), status: status)
    }

    static func json(_ body: ByteBuffer, status: HTTPResponse.Status) -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if status == .serviceUnavailable {
            // The database is gone or a failover is under way: ask again in a second.
            headers[.retryAfter] = "1"
        }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    static func encode(_ errors: [APIError], requestID: String) -> String {
        let bodies = errors.map { error in
            ErrorBody(
                message: error.message,
                locations: error.locations.isEmpty ? nil : error.locations,
                path: error.path.isEmpty ? nil : error.path,
                extensions: .init(code: error.code.rawValue, requestId: requestID, outcomeUnknown: error.outcomeUnknown ? true : nil)
            )
        }
        let data = (try? JSONEncoder().encode(bodies)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func quoted(_ string: String) -> String {
        JSONString.quoted(string)
    }
}

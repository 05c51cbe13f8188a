import CanopyRequestStore
import HTTPTypes
import Hummingbird
import Tracing

/// A server span per request when tracing is on (docs/TRACING.md), the
/// parent of every span of the work the request does. A `traceparent` from
/// the client makes it a child of the client's span.
///
/// Its attributes say nothing of who asked: the method, the route (the
/// pattern, not the path, which may name a container, zone or record), the
/// status, Canopy's error code, the request ID and the database deadlines.
/// Not the query string (credentials), the peer's address or user agent.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = CanopyRequestContext

    let tracing: CanopyTracing
    /// The longest a request waits for a connection, then an answer.
    let deadlines: (connection: Duration, answer: Duration)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Scrapes and health checks, every few seconds, are not traced
        // (issue 64): they would fill the collector with nothing to read.
        let path = request.uri.path
        if path == "/health" || path == "/metrics" { return try await next(request, context) }
        let parent = tracing.context(extractingFrom: request.headers, using: HTTPFieldsExtractor())
        let span = tracing.tracer.startSpan(request.method.rawValue, context: parent, ofKind: .server)
        // Unsampled: nothing recorded, and no trace ID in the logs; the
        // context still carries the trace on (a webhook's traceparent).
        guard span.isRecording else {
            defer { span.end() }
            var unsampled = span.context
            unsampled.canopyUnsampled = true
            return try await ServiceContext.$current.withValue(unsampled) { try await next(request, context) }
        }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            attributes["canopy.request_id"] = context.requestID
        }
        span.describeDeadlines(deadlines)
        var context = context
        // Rendered only if a line is logged.
        context.logger[metadataKey: "trace_id"] = .stringConvertible(TraceIDText(context: span.context))
        do {
            let response = try await ServiceContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            name(span, route: context.endpointPath, method: request.method)
            span.attributes["http.response.status_code"] = Int(response.status.code)
            if response.status.code >= 500 { span.setStatus(.init(code: .error)) }
            // Ended when the handler returns: a body streamed after it (an
            // asset download) is not in the span.
            span.end()
            return response
        } catch {
            name(span, route: context.endpointPath, method: request.method)
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            span.attributes["http.response.status_code"] = Int(status)
            if let apiError = error as? APIError { span.attributes["canopy.error_code"] = apiError.code.rawValue }
            if status >= 500 { span.setStatus(.init(code: .error)) }
            span.end()
            throw error
        }
    }

    /// `METHOD route`, as OpenTelemetry names HTTP server spans.
    private func name(_ span: any Span, route: String?, method: HTTPRequest.Method) {
        guard let route else { return }
        span.operationName = "\(method.rawValue) \(route)"
        span.attributes["http.route"] = route
    }
}

/// Reads `traceparent` and `tracestate` from request headers.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        return fields[name]
    }
}

/// The trace's ID as `traceparent` writes it (32 hex digits), for log
/// lines: worked out when a line is written, not for every request.
struct TraceIDText: CustomStringConvertible, Sendable {
    let context: ServiceContext

    var description: String {
        var carrier: [String: String] = [:]
        context.canopyTracing?.tracer.inject(context, into: &carrier, using: DictionaryInjector())
        let parts = (carrier["traceparent"] ?? "").split(separator: "-")
        return parts.count == 4 ? String(parts[1]) : ""
    }
}

import PostgresNIO
import Tracing

/// Canopy's tracer, when tracing is on (docs/TRACING.md): carried in the
/// request's `ServiceContext`, so work below a traced request makes child
/// spans and work outside one (or with tracing off) makes none. Off, a
/// span costs one task-local read that finds nothing.
public struct CanopyTracing: Sendable {
    public let tracer: any Tracer

    public init(tracer: any Tracer) {
        self.tracer = tracer
    }

    /// A context for new work (a request, a delivery) that carries this
    /// tracer, with what `extract` finds of a remote parent's
    /// (`traceparent`).
    public func context<Carrier, Extract: Extractor>(
        extractingFrom carrier: Carrier, using extractor: Extract
    ) -> ServiceContext where Extract.Carrier == Carrier {
        var context = ServiceContext.topLevel
        context.canopyTracing = self
        tracer.extract(carrier, into: &context, using: extractor)
        return context
    }
}

private enum CanopyTracingKey: ServiceContextKey {
    typealias Value = CanopyTracing
}

private enum CanopyUnsampledKey: ServiceContextKey {
    typealias Value = Bool
}

extension ServiceContext {
    /// The tracer of the traced work this context belongs to, if any.
    public var canopyTracing: CanopyTracing? {
        get { self[CanopyTracingKey.self] }
        set { self[CanopyTracingKey.self] = newValue }
    }

    /// True below a request the sampler left out: no span is made under
    /// it (each would be dropped), but its trace is still handed on.
    public var canopyUnsampled: Bool {
        get { self[CanopyUnsampledKey.self] ?? false }
        set { self[CanopyUnsampledKey.self] = newValue }
    }

    /// Whether work in this context makes spans.
    public var isCanopyTraced: Bool {
        canopyTracing != nil && !canopyUnsampled
    }
}

/// Spans of Canopy's own work, made only inside traced work (see
/// ``CanopyTracing``); `body` gets nil otherwise, and everything it would
/// have recorded is skipped.
public enum CanopySpan {
    /// Runs `body` in a child span of the current one.
    /// (`name` is made only when traced.)
    public static func run<Result>(
        _ name: @autoclosure () -> String, ofKind kind: SpanKind = .internal, isolation: isolated (any Actor)? = #isolation,
        _ body: ((any Span)?) async throws -> Result
    ) async throws -> Result {
        guard let context = ServiceContext.current, let tracing = context.canopyTracing, !context.canopyUnsampled else {
            return try await body(nil)
        }
        let span = tracing.tracer.startSpan(name(), context: context, ofKind: kind)
        defer { span.end() }
        // An unsampled span records nothing: what would describe it is not made.
        let recorded = span.isRecording ? span : nil
        do {
            return try await ServiceContext.$current.withValue(span.context, operation: { try await body(recorded) }, isolation: isolation)
        } catch {
            span.describeFailure(error)
            throw error
        }
    }

    /// ``run(_:ofKind:isolation:_:)`` for work that does not wait (planning).
    public static func run<Result>(_ name: String, _ body: ((any Span)?) throws -> Result) rethrows -> Result {
        guard let context = ServiceContext.current, let tracing = context.canopyTracing, !context.canopyUnsampled else {
            return try body(nil)
        }
        let span = tracing.tracer.startSpan(name, context: context, ofKind: .internal)
        defer { span.end() }
        let recorded = span.isRecording ? span : nil
        do {
            return try ServiceContext.$current.withValue(span.context) { try body(recorded) }
        } catch {
            span.describeFailure(error)
            throw error
        }
    }

    /// The span of the work running now, when traced: for what is learnt
    /// along the way (the plan a field ran).
    public static var current: (any Span)? {
        guard let context = ServiceContext.current, context.isCanopyTraced, let tracing = context.canopyTracing,
              let span = tracing.tracer.activeSpan(identifiedBy: context), span.isRecording else { return nil }
        return span
    }

    /// The current traced context's `traceparent`, to hand on to work that
    /// happens later elsewhere (a webhook for this write): nil when not traced.
    public static var traceParent: String? {
        guard let context = ServiceContext.current, let tracing = context.canopyTracing else { return nil }
        var carrier: [String: String] = [:]
        tracing.tracer.inject(context, into: &carrier, using: DictionaryInjector())
        return carrier["traceparent"]
    }
}

/// Headers as a dictionary of lowercased names, for ``CanopySpan/traceParent``
/// and for a stored `traceparent` read back (``DictionaryExtractor``).
public struct DictionaryInjector: Injector {
    public init() {}
    public func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key.lowercased()] = value
    }
}

public struct DictionaryExtractor: Extractor {
    public init() {}
    public func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key.lowercased()]
    }
}

extension Span {
    /// A failed span's error, saying nothing of who asked (docs/TRACING.md;
    /// issue 64): the error's type and, from PostgreSQL, its SQLSTATE, never
    /// its message, which can name zones, subscriptions and filter values.
    /// (`recordError` would write the message as `exception.message`.)
    func describeFailure(_ error: any Error) {
        attributes["error.type"] = String(describing: type(of: error))
        if let sqlState = (error as? PSQLError)?.serverInfo?[.sqlState] {
            attributes["db.response.status_code"] = sqlState
        }
        setStatus(.init(code: .error))
    }
}

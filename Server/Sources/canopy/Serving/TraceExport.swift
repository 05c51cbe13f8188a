import CanopyRequestStore
import Logging
import OTel
import ServiceLifecycle

/// `canopy serve`'s traces (docs/TRACING.md): off unless the standard
/// OpenTelemetry variables ask for them, then a span per request exported
/// over OTLP/HTTP by swift-otel, configured by the same variables
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_SAMPLER`, …).
///
/// Only traces: logs stay swift-log's lines and metrics stay Prometheus's
/// `/metrics`.
struct TraceExport {
    /// The tracer requests carry.
    let tracing: CanopyTracing
    /// swift-otel's batching and exporting, which must run while serving
    /// and stop after the server (it sends the last spans then).
    let service: any Service
    /// Where spans go, for the log line at start.
    let endpoint: String

    /// Whether the environment turns tracing on: an OTLP endpoint, or
    /// `OTEL_TRACES_EXPORTER` naming an exporter; never with
    /// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
    static func isRequested(by environment: [String: String]) -> Bool {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        if value("OTEL_SDK_DISABLED")?.lowercased() == "true" { return false }
        if let exporter = value("OTEL_TRACES_EXPORTER") { return exporter.lowercased() != "none" }
        return value("OTEL_EXPORTER_OTLP_ENDPOINT") != nil || value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != nil
    }

    /// The exporter the environment asks for, or nil when it asks for none.
    /// An unusable setting (a gRPC protocol, which this build leaves out;
    /// a malformed endpoint) is an error that names it.
    static func fromEnvironment(_ environment: [String: String], logger: Logger) throws -> TraceExport? {
        guard isRequested(by: environment) else { return nil }
        if let proto = environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] ?? environment["OTEL_EXPORTER_OTLP_PROTOCOL"],
           !proto.isEmpty, proto != "http/protobuf", proto != "http/json" {
            throw TraceExportError("OTEL_EXPORTER_OTLP_PROTOCOL is \(proto): Canopy exports traces over OTLP/HTTP only; set http/protobuf (the default) and the collector's HTTP port (usually 4318)")
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "canopy"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.diagnosticLogger = .custom(logger)
        // A collector that is away must not hold up a stop (issue 64: 7-15 s
        // with swift-otel's 10 s export and 30 s flush): the last spans get
        // 2 s. OTEL_EXPORTER_OTLP_TIMEOUT and OTEL_BSP_EXPORT_TIMEOUT, read
        // over these, still decide when set.
        configuration.traces.otlpExporter.timeout = .seconds(2)
        configuration.traces.batchSpanProcessor.exportTimeout = .seconds(2)
        do {
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            let endpoint = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 }
                ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 }.map { $0.hasSuffix("/") ? "\($0)v1/traces" : "\($0)/v1/traces" }
                ?? "http://localhost:4318/v1/traces"
            return TraceExport(tracing: CanopyTracing(tracer: backend.factory), service: backend.service, endpoint: endpoint)
        } catch {
            throw TraceExportError("the OTEL_* variables do not make a usable trace exporter: \(error)")
        }
    }
}

/// Why tracing could not start.
struct TraceExportError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

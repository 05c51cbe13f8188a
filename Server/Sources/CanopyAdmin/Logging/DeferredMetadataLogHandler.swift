import Logging

/// swift-log's `StreamLogHandler`, with its metadata formatted when a line
/// is written rather than whenever it is set. The stream handler renders
/// all of its metadata on every change, and the gateway sets a request id
/// on each request's logger: a sort and a string per request (issue 69's
/// W1 profile), for lines that are mostly never written. The lines are the
/// stream handler's own, byte for byte.
public struct DeferredMetadataLogHandler: LogHandler {
    private var stream: StreamLogHandler
    public var metadata: Logger.Metadata
    /// Asked when a line is written, as the stream handler would ask it.
    public var metadataProvider: Logger.MetadataProvider?

    /// Takes over `stream`'s metadata and metadata provider; `stream` then
    /// only writes the lines it is handed.
    public init(_ stream: StreamLogHandler) {
        self.stream = stream
        metadata = stream.metadata
        metadataProvider = stream.metadataProvider
        self.stream.metadata = [:]
        self.stream.metadataProvider = nil
    }

    /// Standard error, as `StreamLogHandler.standardError(label:)`.
    public static func standardError(label: String) -> DeferredMetadataLogHandler {
        DeferredMetadataLogHandler(StreamLogHandler.standardError(label: label))
    }

    public var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let provided = metadataProvider?.get() ?? [:]
        guard !metadata.isEmpty || !provided.isEmpty else { return stream.log(event: event) }
        // The stream handler's order: this logger's metadata, the
        // provider's over it, the line's own over both (and an error's,
        // which the stream handler adds last, over everything).
        var event = event
        event.metadata = metadata
            .merging(provided) { _, provided in provided }
            .merging(event.metadata ?? [:]) { _, line in line }
        stream.log(event: event)
    }
}

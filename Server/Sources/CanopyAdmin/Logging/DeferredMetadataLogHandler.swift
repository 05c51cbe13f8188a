import Logging

/// swift-log's `StreamLogHandler`, with its metadata formatted when a line
/// is written rather than whenever it is set. The stream handler renders
/// all of its metadata on every change, and the gateway sets a request id
/// on each request's logger: a sort and a string per request (issue 69's
/// W1 profile), for lines that are mostly never written. The lines are the
/// stream handler's own, byte for byte.
public struct DeferredMetadataLogHandler: LogHandler {
    private var stream: StreamLogHandler
    public var metadata = Logger.Metadata()

    public init(_ stream: StreamLogHandler) {
        self.stream = stream
        self.stream.metadata = [:]
    }

    /// Standard error, as `StreamLogHandler.standardError(label:)`.
    public static func standardError(label: String) -> DeferredMetadataLogHandler {
        DeferredMetadataLogHandler(StreamLogHandler.standardError(label: label))
    }

    public var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        guard !metadata.isEmpty else { return stream.log(event: event) }
        var event = event
        // The stream handler's order: this logger's metadata, then the
        // line's own over it (a metadata provider's keys come under both
        // here, over the logger's there: none of Canopy's collide).
        event.metadata = metadata.merging(event.metadata ?? [:]) { _, line in line }
        stream.log(event: event)
    }
}

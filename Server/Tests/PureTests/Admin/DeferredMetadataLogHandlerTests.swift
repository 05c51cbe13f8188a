import CanopyAdmin
import Logging
import Synchronization
import Testing

/// `canopy`'s log handler writes the lines swift-log's `StreamLogHandler`
/// writes, while formatting its metadata only when a line is written.
@Suite("Deferred-metadata log handler")
struct DeferredMetadataLogHandlerTests {
    final class Lines: TextOutputStream, Sendable {
        private let text = Mutex("")
        func write(_ string: String) { text.withLock { $0 += string } }
        /// The lines without their timestamps (seconds that may tick between two handlers).
        var lines: [String] {
            text.withLock { $0 }.split(separator: "\n").map { $0.split(separator: " ", maxSplits: 1).last.map(String.init) ?? "" }
        }
    }

    @Test("the same lines as StreamLogHandler: a logger's metadata set, changed and removed, a line's own metadata over it, levels")
    func sameLines() {
        let plain = Lines(), deferred = Lines()
        for (stream, handler) in [(plain, StreamLogHandler(label: "canopy", stream: plain, metadataProvider: nil) as any LogHandler),
                                  (deferred, DeferredMetadataLogHandler(StreamLogHandler(label: "canopy", stream: deferred, metadataProvider: nil)))] {
            _ = stream
            var logger = Logger(label: "canopy") { _ in handler }
            logger.logLevel = .info
            logger.info("no metadata")
            logger[metadataKey: "canopy.request.id"] = "3f2a"
            logger[metadataKey: "hb.request.id"] = "7"
            logger.info("two keys")
            logger.debug("below the level")
            logger[metadataKey: "hb.request.id"] = "8"
            logger.warning("a line's own", metadata: ["canopy.request.id": "over", "extra": .array(["a", "b"])])
            logger[metadataKey: "canopy.request.id"] = nil
            logger.error("one removed")
        }
        #expect(deferred.lines == plain.lines)
        #expect(plain.lines.count == 4, "\(plain.lines)")
        #expect(plain.lines[1] == "info canopy: canopy.request.id=3f2a hb.request.id=7 [PureTests] two keys", "\(plain.lines)")
    }

    struct Refused: Error {}

    @Test("the same lines with a metadata provider (its keys over the logger's, under the line's) and with an error")
    func providerAndError() {
        let provider = Logger.MetadataProvider { ["trace_id": "abc", "canopy.request.id": "provided"] }
        let plain = Lines(), deferred = Lines()
        for handler in [StreamLogHandler(label: "canopy", stream: plain, metadataProvider: provider) as any LogHandler,
                        DeferredMetadataLogHandler(StreamLogHandler(label: "canopy", stream: deferred, metadataProvider: provider))] {
            var logger = Logger(label: "canopy") { _ in handler }
            logger.info("only the provider's")
            logger[metadataKey: "canopy.request.id"] = "3f2a"
            logger.info("the provider's over the logger's")
            logger.warning("the line's over both", metadata: ["trace_id": "line"])
            logger.error("an error", error: Refused())
        }
        #expect(deferred.lines == plain.lines)
        #expect(plain.lines.count == 4, "\(plain.lines)")
    }
}

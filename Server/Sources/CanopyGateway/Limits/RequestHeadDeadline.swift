import CanopyRequestStore
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Closes a connection whose first request line and headers have not all
/// arrived within a deadline (a slowloris client trickling header bytes),
/// and answers a head over the size limit with 400 before closing.
///
/// Hummingbird's idle timeout starts only once a first head is decoded, and
/// on the WebSocket-upgrade pipeline a decoder error before then is dropped
/// with the connection left open; this handler, just after NIO's request
/// decoder, covers both and removes itself at the first head (later heads
/// of a keep-alive connection are covered by the idle timeout).
final class RequestHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let bound = context.loopBound
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            bound.value.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The decoder's first part is always a whole head.
        deadline?.cancel()
        deadline = nil
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        deadline?.cancel()
        deadline = nil
        let head = HTTPResponseHead(version: .http1_1, status: .badRequest, headers: ["connection": "close", "content-length": "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let bound = context.loopBound
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}

/// A server child channel with a ``RequestHeadDeadline`` after its request
/// decoder: wraps the HTTP/1 + WebSocket channel the gateway serves. With
/// `loops` (`--serve-on-loop`), the connection's whole life (reading,
/// answering, its WebSocket session) runs on its socket's loop.
struct HeadDeadlineChannel<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let headTimeout: TimeAmount
    var loops: ServingLoops? = nil

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        // The base configures the pipeline synchronously, decoder included.
        let future = base.setup(channel: channel, logger: logger)
        do {
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try operations.addHandler(RequestHeadDeadline(timeout: headTimeout), position: .after(decoder))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return future
    }

    func handle(value: Base.Value, logger: Logger) async {
        guard let loops else { return await base.handle(value: value, logger: logger) }
        await loops.pin(value.channel.eventLoop) {
            await base.handle(value: value, logger: logger)
        }
    }
}

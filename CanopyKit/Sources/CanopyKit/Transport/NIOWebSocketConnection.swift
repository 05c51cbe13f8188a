#if canImport(FoundationNetworking)
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// A WebSocket client on SwiftNIO's HTTP upgrade, for Linux. It answers
/// the server's pings, masks what it sends (RFC 6455 §5.3) and joins
/// fragmented text messages.
final class NIOWebSocketConnection: WebSocketConnection {
    private enum Upgrade {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case refused
    }

    private let incoming: AsyncThrowingStream<String, any Error>
    private let outgoing: AsyncStream<WebSocketFrame>.Continuation
    private let iterator: IteratorBox

    /// The incoming stream's iterator, used by one receiver at a time.
    private final class IteratorBox: @unchecked Sendable {
        var iterator: AsyncThrowingStream<String, any Error>.AsyncIterator
        init(_ iterator: AsyncThrowingStream<String, any Error>.AsyncIterator) { self.iterator = iterator }
    }

    private init(channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>) {
        let (incoming, received) = AsyncThrowingStream<String, any Error>.makeStream()
        let (outgoingFrames, outgoing) = AsyncStream<WebSocketFrame>.makeStream()
        self.incoming = incoming
        self.outgoing = outgoing
        self.iterator = IteratorBox(incoming.makeAsyncIterator())
        Task {
            do {
                try await channel.executeThenClose { inbound, outbound in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await frame in outgoingFrames {
                                try await outbound.write(frame)
                                if frame.opcode == .connectionClose { return }
                            }
                        }
                        var message = ByteBuffer()
                        for try await frame in inbound {
                            switch frame.opcode {
                            case .text, .continuation:
                                var data = frame.unmaskedData
                                message.writeBuffer(&data)
                                if frame.fin {
                                    received.yield(String(buffer: message))
                                    message.clear()
                                }
                            case .ping:
                                outgoing.yield(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData))
                            case .connectionClose:
                                outgoing.yield(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: ByteBuffer()))
                                outgoing.finish()
                                received.finish()
                                try await group.waitForAll()
                                return
                            default:
                                break
                            }
                        }
                        outgoing.finish()
                        received.finish()
                        group.cancelAll()
                    }
                }
            } catch {
                received.finish(throwing: CanopyError(.networkFailure, "the subscription socket failed: \(error)"))
            }
            received.finish()
        }
    }

    static func connect(_ url: URL, headers: [String: String]) async throws -> NIOWebSocketConnection {
        guard let host = url.host else { throw CanopyError(.invalidArguments, "no host in \(url)") }
        let secure = url.scheme == "wss" || url.scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        let path = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?\($0)" } ?? "")
        let tls: NIOSSLContext? = secure ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        let upgrade: EventLoopFuture<Upgrade>
        do {
            upgrade = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls {
                            try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: host))
                        }
                        let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
                            maxFrameSize: 1 << 24,
                            upgradePipelineHandler: { channel, _ in
                                channel.eventLoop.makeCompletedFuture {
                                    .websocket(try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel))
                                }
                            })
                        var requestHeaders = HTTPHeaders()
                        requestHeaders.add(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
                        requestHeaders.add(name: "Content-Length", value: "0")
                        for (name, value) in headers { requestHeaders.add(name: name, value: value) }
                        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: requestHeaders)
                        let configuration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade>(
                            upgradeRequestHead: head, upgraders: [upgrader],
                            notUpgradingCompletionHandler: { channel in channel.eventLoop.makeCompletedFuture { .refused } })
                        return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                            configuration: .init(upgradeConfiguration: configuration))
                    }
                }
        } catch {
            throw CanopyError(.networkFailure, "\(url) could not be reached: \(error)")
        }
        switch try await upgrade.get() {
        case .websocket(let channel): return NIOWebSocketConnection(channel: channel)
        case .refused: throw CanopyError(.notAuthenticated, "the server refused the WebSocket upgrade at \(url)")
        }
    }

    func send(_ text: String) async throws {
        outgoing.yield(WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(string: text)))
    }

    func receive() async throws -> String? {
        try await iterator.iterator.next()
    }

    func close() async {
        outgoing.yield(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: ByteBuffer(integer: UInt16(1000))))
        outgoing.finish()
    }
}
#endif

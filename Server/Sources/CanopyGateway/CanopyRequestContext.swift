import CanopyWebServices
import Hummingbird
import NIOCore
import HummingbirdWebSocket
import Logging

/// Per-request state: the request id (also in every log line as
/// `canopy.request.id`) and, once authenticated, who is asking.
public struct CanopyRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Holds the WebSocket handler reference of a request that upgrades (subscriptions).
    let webSocketSlot: WebSocketSlot
    public var requestID: String
    public var userID: Int64?
    /// The connection, for its remote address (read only where needed:
    /// the console's transport check).
    let channel: any Channel
    /// A Web Services request's path, read once by
    /// ``WebServicesContainerMiddleware`` for the middleware and the
    /// endpoint after it.
    var webServicesPath: WebServicesPath?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        webSocketSlot = WebSocketSlot()
        requestID = Self.makeRequestID()
        userID = nil
        logger[metadataKey: "canopy.request.id"] = .string(requestID)
    }

    /// Set when the request upgrades to a WebSocket; see ``WebSocketSlot``.
    public var webSocket: WebSocketHandlerReference<CanopyRequestContext> { webSocketSlot.reference }

    static func makeRequestID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 16)
    }
}

import HummingbirdWebSocket
import Synchronization

/// Where a request context keeps its WebSocket handler reference, so the
/// subscription route can let go of it when the socket ends.
///
/// HummingbirdWebSocket 2.8.1 stores the upgraded request's context inside
/// the handler reference that the context itself holds: a reference
/// cycle, so every upgraded connection's context, logger metadata and
/// handler stayed in memory for good (found by heap-profiling the soak:
/// 8,060 contexts, about 800 bytes each, after 14 minutes; issue 20). The
/// slot makes the reference on first use (only WebSocket upgrades ask for
/// it) and ``release()`` drops it, which breaks the cycle.
final class WebSocketSlot: Sendable {
    private enum State {
        case unused
        case holding(WebSocketHandlerReference<CanopyRequestContext>)
        case released
    }

    private let state = Mutex(State.unused)
    /// Slots that made a reference and are still in memory: what
    /// `WebSocketSlotTests` watches fall back after sockets close. With the
    /// cycle unbroken it only grows.
    static let live = Atomic<Int>(0)

    var reference: WebSocketHandlerReference<CanopyRequestContext> {
        state.withLock { state in
            switch state {
            case .holding(let reference):
                return reference
            case .unused:
                let reference = WebSocketHandlerReference<CanopyRequestContext>()
                state = .holding(reference)
                Self.live.add(1, ordering: .relaxed)
                return reference
            case .released:
                return WebSocketHandlerReference()
            }
        }
    }

    /// Drops the reference (and with it the stored context): call when the socket has ended.
    func release() {
        state.withLock { state in
            if case .holding = state { state = .released }
        }
    }

    deinit {
        let made = state.withLock { state -> Bool in
            if case .unused = state { return false }
            return true
        }
        if made { Self.live.subtract(1, ordering: .relaxed) }
    }
}

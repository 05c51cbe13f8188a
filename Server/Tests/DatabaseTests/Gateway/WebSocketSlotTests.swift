@testable import CanopyGatewayTestSupport
@testable import CanopyGateway
import Foundation
import HummingbirdTesting
import Testing

/// HummingbirdWebSocket 2.8.1 keeps an upgraded request's context inside
/// the handler reference the context holds; without `WebSocketSlot`'s
/// release every subscription socket stayed in memory (the soak's RSS
/// growth, issue 20).
@Suite("WebSocket contexts are freed")
struct WebSocketSlotTests {
    @Test("twenty closed subscription sockets leave no request context behind")
    func closedSocketsAreFreed() async throws {
        let harness = try await GatewayHarness.make()
        let before = WebSocketSlot.live.load(ordering: .relaxed)
        try await harness.test(live: true) { client in
            for _ in 0..<20 {
                try await client.subscriptionSocket(token: harness.aliceToken) { inbox, send in
                    try await send("{\"type\":\"connection_init\"}")
                    #expect(try await inbox.next()?["type"] as? String == "connection_ack")
                }
            }
        }
        // Other suites may hold sockets open meanwhile; ours must all go.
        var after = WebSocketSlot.live.load(ordering: .relaxed)
        for _ in 0..<200 where after > before {
            try await Task.sleep(for: .milliseconds(100))
            after = WebSocketSlot.live.load(ordering: .relaxed)
        }
        #expect(after <= before, "\(after - before) request contexts of closed sockets are still in memory")
    }
}

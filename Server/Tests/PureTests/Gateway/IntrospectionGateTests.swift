@testable import CanopyGateway
import CanopyPlanner
import Foundation
import Testing

/// Issue 64: anonymous introspection documents take turns on a gate of
/// their own, so they cannot keep a signed-in developer's waiting.
@Suite("The introspection gates")
struct IntrospectionGateTests {
    @Test("while an anonymous document holds its gate, another anonymous one is 429 and a signed-in caller's is answered")
    func signedInNotHeldByAnonymous() async throws {
        let gates = Introspection.Gates()
        // An anonymous introspection in flight.
        let held = gates.anonymous.running.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged
        #expect(held)
        let parsed = try ParsedRequest(query: "# \(UUID())\n{ __schema { queryType { name } } }")
        let roots = try parsed.rootFields()
        do {
            _ = try await Introspection.answer(parsed, roots: roots, gate: gates.gate(signedIn: false))
            Issue.record("a second anonymous document was answered while the first held the gate")
        } catch let error as APIError {
            #expect(error.code == .limitExceeded && error.retryAfter == 1, "\(error)")
        }
        let answered = try await Introspection.answer(parsed, roots: roots, gate: gates.gate(signedIn: true))
        #expect(answered.status == .ok)
        let signedInHeld = gates.signedIn.running.load(ordering: .relaxed)
        #expect(!signedInHeld, "the signed-in gate is free again")
    }
}

import CanopyKit
import CanopyPlanner
import Testing

/// CanopyKit is a package of its own and cannot import the server's
/// ``ErrorCode``; this keeps the two lists from drifting (issue 34).
@Suite("CanopyKit's error codes and the server's")
struct ErrorCodeAgreementTests {
    @Test("every code the server answers with is a CanopyError.Code, spelled the same")
    func everyServerCodeIsKnown() {
        let client = Set(CanopyError.Code.allCases.map(\.rawValue))
        let missing = ErrorCode.allCases.map(\.rawValue).filter { !client.contains($0) }
        #expect(missing.isEmpty, "CanopyError.Code lacks \(missing)")
    }

    @Test("CanopyKit's own codes (what it adds for the transport) are not codes the server could send with another meaning")
    func clientOnlyCodesAreDistinct() {
        let server = Set(ErrorCode.allCases.map(\.rawValue))
        let clientOnly = CanopyError.Code.allCases.map(\.rawValue).filter { !server.contains($0) }
        #expect(Set(clientOnly) == ["REQUEST_RATE_LIMITED", "PARTIAL_FAILURE", "NETWORK_FAILURE", "SERVER_RESPONSE_LOST"],
                "\(clientOnly)")
    }
}

@testable import CanopyGateway
@testable import CanopyGatewayTestSupport
import Testing

/// A request whose client went away (or whose gateway is stopping) is
/// cancelled: that is answered as SERVICE_UNAVAILABLE and logged at debug,
/// never as an INTERNAL_ERROR in the error log (issue 40's example app saw
/// one each time a page navigated away during a request).
@Suite("A cancelled request")
struct CancelledRequestTests {
    @Test("CancellationError maps to SERVICE_UNAVAILABLE and logs no internal error; another unexpected error still does")
    func cancellation() {
        let logs = CapturedLogs()
        let cancelled = APIError(CancellationError(), requestID: "r1", logger: logs.logger())
        #expect(cancelled.code == .serviceUnavailable)
        #expect(!logs.text.contains("internal error"), "\(logs.text)")
        #expect(logs.text.contains("request cancelled"))

        struct Unexpected: Error {}
        let unexpected = APIError(Unexpected(), requestID: "r2", logger: logs.logger())
        #expect(unexpected.code == .internalError)
        #expect(logs.text.contains("internal error"))
    }
}

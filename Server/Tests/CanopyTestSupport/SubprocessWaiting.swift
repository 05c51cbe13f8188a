import CanopyAdmin
import Foundation

extension Subprocess.Started {
    /// Waits for the process on a thread of its own: a blocking wait on the
    /// cooperative pool (two threads on this machine) would starve the
    /// in-process gateway the process may be talking to.
    public func finished() async throws -> Subprocess.Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Swift.Result { try self.wait() }) }.start()
        }
    }
}

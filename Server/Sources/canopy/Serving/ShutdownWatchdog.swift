import Dispatch
import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Bounds how long `canopy serve` may take to stop once told to: the
/// service group drains for `--shutdown-grace`-like limits of its own,
/// but a task that ignores cancellation, or a wedged cooperative pool,
/// would keep the process alive with nothing answered, which an
/// orchestrator (or a test) then waits on for ever. On the first SIGTERM or
/// SIGINT this starts a timer on a Dispatch queue, outside Swift's
/// cooperative pool, that ends the process with status 70 when `limit`
/// passes. Dispatch delivers a signal to every source of it, so the
/// service group's own handlers still run.
final class ShutdownWatchdog {
    private let sources: [any DispatchSourceSignal]

    init(limit: Duration, logger: Logger) {
        let queue = DispatchQueue(label: "canopy.shutdown-watchdog")
        let armed = Armed()
        sources = [SIGTERM, SIGINT].map { signal in
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler {
                guard armed.arm() else { return }
                let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
                queue.asyncAfter(deadline: .now() + seconds) {
                    logger.critical("did not stop within \(limit) of the signal; exiting", metadata: ["canopy.limit": "\(limit)"])
                    fflush(nil)
                    _exit(70)
                }
            }
            source.resume()
            return source
        }
    }

    deinit {
        sources.forEach { $0.cancel() }
    }

    /// Set once, by the first signal.
    private final class Armed: @unchecked Sendable {
        private let lock = NSLock()
        private var armed = false

        /// True the first time only.
        func arm() -> Bool {
            lock.lock()
            defer { lock.unlock() }
            defer { armed = true }
            return !armed
        }
    }
}

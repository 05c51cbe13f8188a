import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix

/// `canopy serve --concurrency-on-loops` (issue 69; DECISIONS 197): Swift
/// concurrency's global executor becomes NIO's event loops, the very
/// threads that own the sockets and the database connections. A job
/// enqueued on a loop stays on that loop, so a request's work, its
/// statement's rows and its answer's write meet on one thread instead of
/// crossing between Swift's pool and NIO's; nothing per request is set or
/// looked up for it (unlike a task executor preference,
/// `--serve-on-loop`'s pin). Process-wide and for the process's life, so
/// it is installed first thing, before the gateway starts any work.
enum ConcurrencyOnLoops {
    /// Installs NIO's singleton loops as the global executor; false when
    /// the runtime refused (another hook was there first). Recorded in
    /// `canopy_concurrency_on_loops` (1 installed, 0 not) either way.
    @discardableResult
    static func install(_ wanted: Bool, logger: Logger) -> Bool {
        #if canImport(Darwin)
        // On Darwin SwiftNIO stops the process when this is not the main
        // thread, and a command's `run()` is not: refused there instead.
        let allowed = Thread.isMainThread
        #else
        let allowed = true
        #endif
        let installed = wanted && allowed && NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        Gauge(label: "canopy_concurrency_on_loops").record(installed ? 1 : 0)
        if wanted && !installed {
            logger.warning("--concurrency-on-loops: not installed (the runtime refused NIO's loops as its global executor, or this is macOS, where only the main thread may install them); serving on Swift's own pool")
        } else if installed {
            logger.info("Swift concurrency runs on the event loops (--concurrency-on-loops)")
        }
        return installed
    }
}

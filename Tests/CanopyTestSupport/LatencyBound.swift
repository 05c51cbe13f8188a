import Foundation

/// How long a test lets something take: the strict bound when the test
/// runs alone (make test's strict-latency pass sets
/// CANOPY_STRICT_LATENCY=1), a loose one in the parallel run, where two
/// cores are shared with every other suite and a thread can wait seconds.
/// A test asserts speed only through this, so the parallel run never
/// fails on a loaded machine's scheduling.
public func latencyBound(strict: Duration, loaded: Duration) -> Duration {
    ProcessInfo.processInfo.environment["CANOPY_STRICT_LATENCY"] == "1" ? strict : loaded
}

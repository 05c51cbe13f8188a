import Metrics

/// What planning did for one statement a request ran, counted in
/// `/metrics` as `canopy_plans_total{outcome}` so the plan cache's hit rate
/// covers every statement, not only the cached operations' (issue 69, P1):
/// `hit` (bound into a kept statement), `miss` (planned and kept),
/// `replanned` (a kept plan did not fit), `uncacheable` (a shape the cache
/// does not keep), `off` (`--plan-cache-size 0`) and `uncached` (an
/// operation not yet served by the cache: planned every time).
enum PlanOutcome: String, Sendable, CaseIterable {
    case hit, miss, replanned, uncacheable, off, uncached

    /// Counts one statement planned this way.
    func count() {
        Self.counters[index].increment()
    }

    private var index: Int {
        switch self {
        case .hit: 0
        case .miss: 1
        case .replanned: 2
        case .uncacheable: 3
        case .off: 4
        case .uncached: 5
        }
    }

    /// Made once (a counter made per request would cost a registry lookup).
    private static let counters: [Counter] = allCases.map { Counter(label: "canopy_plans_total", dimensions: [("outcome", $0.rawValue)]) }
}

import CanopyPlanner
import CanopyRequestStore
import Logging
import Metrics
import Synchronization

/// Statements planned once per shape (issue 51): a `records` or `lookup`
/// request whose document, root field, variables beyond the field's own
/// arguments, checked shape and schema version were seen before binds its
/// values into the statement made then, and runs it prepared, without
/// writing SQL or hashing it. One per gateway (its schema versions are its
/// own), least recently used first out, bounded by entries.
///
/// What the key leaves out is what a request only binds: the zone's name,
/// the filter's values, the limit, the cursor's keys, the record names, and
/// the caller (a parameter of every read, never in the text). Every value
/// is still read and checked per request, so a request's errors are those
/// it would get without the cache, in the same order.
public final class PlanCache: Sendable {
    struct Key: Hashable, Sendable {
        let document: Int
        let field: String
        let variables: String
        let shape: String
        let schemaVersion: Int
    }

    /// A planned statement: its text and how to bind it, made ready to run.
    struct Entry: Sendable {
        let template: StatementTemplate
        let prepared: PreparedRead
        let recordType: String?
    }

    /// Counts for tests (`/metrics` has the same as counters).
    public struct Statistics: Sendable, Equatable {
        public var hits = 0
        public var misses = 0
        public var capacityEvictions = 0
        public var schemaEvictions = 0
        public var mismatches = 0
        public var entries = 0
    }

    let capacity: Int
    /// Whether every hit also plans anew and compares the two statements:
    /// a difference is a key that missed a dependency.
    let verification: PlanCacheVerification
    private let state: Mutex<LRU>

    private struct Node {
        var key: Key
        var entry: Entry
        var older: Int
        var newer: Int
    }

    /// A doubly linked list over an array (O(1) hits and evictions) and an index into it.
    private struct LRU {
        var nodes: [Node] = []
        var index: [Key: Int] = [:]
        var free: [Int] = []
        var newest = -1
        var oldest = -1
        var statistics = Statistics()

        mutating func unlink(_ slot: Int) {
            let node = nodes[slot]
            if node.older >= 0 { nodes[node.older].newer = node.newer } else { oldest = node.newer }
            if node.newer >= 0 { nodes[node.newer].older = node.older } else { newest = node.older }
        }

        mutating func linkNewest(_ slot: Int) {
            nodes[slot].older = newest
            nodes[slot].newer = -1
            if newest >= 0 { nodes[newest].newer = slot } else { oldest = slot }
            newest = slot
        }

        mutating func remove(_ slot: Int) {
            unlink(slot)
            index[nodes[slot].key] = nil
            free.append(slot)
        }
    }

    public init(capacity: Int, verification: PlanCacheVerification) {
        self.capacity = max(0, capacity)
        self.verification = verification
        state = Mutex(LRU())
    }

    var isEnabled: Bool { capacity > 0 }

    public var statistics: Statistics {
        state.withLock { $0.statistics }
    }

    /// The entry for `key`, counted as a hit or a miss of `operation`.
    func entry(_ key: Key, operation: Operation) -> Entry? {
        let found: Entry? = state.withLock { lru in
            guard let slot = lru.index[key] else {
                lru.statistics.misses += 1
                return nil
            }
            lru.statistics.hits += 1
            if lru.newest != slot {
                lru.unlink(slot)
                lru.linkNewest(slot)
            }
            return lru.nodes[slot].entry
        }
        (found == nil ? operation.misses : operation.hits).increment()
        return found
    }

    func insert(_ key: Key, _ entry: Entry) {
        var evicted = 0
        let count: Int = state.withLock { lru in
            if let slot = lru.index[key] {
                lru.nodes[slot].entry = entry
                return lru.index.count
            }
            while lru.index.count >= capacity, lru.oldest >= 0 {
                lru.remove(lru.oldest)
                lru.statistics.capacityEvictions += 1
                evicted += 1
            }
            let node = Node(key: key, entry: entry, older: -1, newer: -1)
            let slot: Int
            if let reused = lru.free.popLast() {
                lru.nodes[reused] = node
                slot = reused
            } else {
                lru.nodes.append(node)
                slot = lru.nodes.count - 1
            }
            lru.index[key] = slot
            lru.linkNewest(slot)
            lru.statistics.entries = lru.index.count
            return lru.index.count
        }
        if evicted > 0 { Self.capacityEvictions.increment(by: evicted) }
        Self.entries.record(count)
    }

    /// Drops the plans of `recordType`: its schema changed.
    func invalidate(recordType: String) {
        let dropped: Int = state.withLock { lru in
            let slots = lru.index.values.filter { lru.nodes[$0].entry.recordType == recordType }
            for slot in slots { lru.remove(slot) }
            lru.statistics.schemaEvictions += slots.count
            lru.statistics.entries = lru.index.count
            return slots.count
        }
        if dropped > 0 {
            Self.schemaEvictions.increment(by: dropped)
            Self.entries.record(statistics.entries)
        }
    }

    /// A hit whose values did not fit its plan, or (verifying) whose
    /// statement differed from a new plan's.
    func mismatch(_ what: String, logger: Logger) throws {
        state.withLock { $0.statistics.mismatches += 1 }
        Self.mismatches.increment()
        logger.error("plan cache mismatch: \(what)")
        if verification == .strict { throw APIError(.internalError, "plan cache mismatch: \(what)") }
    }

    /// The operations the cache serves, each with its counters.
    struct Operation: Sendable {
        let hits: Counter
        let misses: Counter

        init(_ name: String) {
            hits = Counter(label: "canopy_plan_cache_hits_total", dimensions: [("operation", name)])
            misses = Counter(label: "canopy_plan_cache_misses_total", dimensions: [("operation", name)])
        }

        static let records = Operation("records")
        static let lookup = Operation("lookup")
        /// Web Services' `records/lookup` (W9's path).
        static let webServicesLookup = Operation("records/lookup")
        /// Web Services' `records/query` (W10's path).
        static let webServicesQuery = Operation("records/query")
    }

    static let capacityEvictions = Counter(label: "canopy_plan_cache_evictions_total", dimensions: [("reason", "capacity")])
    static let schemaEvictions = Counter(label: "canopy_plan_cache_evictions_total", dimensions: [("reason", "schema")])
    static let mismatches = Counter(label: "canopy_plan_cache_mismatches_total")
    static let entries = Gauge(label: "canopy_plan_cache_entries")
}

extension PlanCache {
    /// A hit's plan, from its entry by `replay`; nil when the request's
    /// values do not fit the entry or (verifying) the statement differs
    /// from the one `cold` plans anew: counted, and the caller plans anew.
    func replayed<Plan: TemplatedPlan>(_ replay: () throws -> Plan, cold: () throws -> Plan, logger: Logger) throws -> Plan? {
        let plan: Plan
        do {
            plan = try replay()
        } catch {
            try mismatch("the request's values do not fit the cached plan", logger: logger)
            return nil
        }
        if verification != .off {
            let fresh = try cold()
            guard fresh.statement == plan.statement else {
                try mismatch("the cached plan's statement differs from a new plan's", logger: logger)
                return nil
            }
        }
        return plan
    }
}

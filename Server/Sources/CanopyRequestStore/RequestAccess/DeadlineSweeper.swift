import Foundation

/// The timers of every database call in flight, fired by one thread that
/// looks every `tick` while any is armed and waits until one is armed
/// otherwise. A call arms and disarms a timer under a lock, with no task
/// and no system timer of its own: a sleeping task per call (its creation,
/// the dispatch timer and event-loop poke behind `Task.sleep`, its
/// cancellation) was 7% of a request's CPU (issue 39,
/// docs/BENCHMARK_NOTES.md), and so was `Task.sleep` for the sweep itself,
/// hence a plain thread. A timer fires up to one tick late; the deadlines
/// it serves are 100 ms and more.
final class DeadlineSweeper: @unchecked Sendable {
    static let shared = DeadlineSweeper(tick: 0.01)

    private struct Timer {
        var due: ContinuousClock.Instant
        var fire: @Sendable () -> Void
    }

    // Everything below `condition` is read and written only under it.
    private let condition = NSCondition()
    private var timers: [UInt64: Timer] = [:]
    private var nextID: UInt64 = 0
    private var started = false
    private let tick: TimeInterval

    init(tick: TimeInterval) {
        self.tick = tick
    }

    /// Arms a timer that calls `fire` once, `delay` from now, unless
    /// disarmed first. Returns its id, for `disarm`.
    func arm(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> UInt64 {
        let due = ContinuousClock.now + delay
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        timers[nextID] = Timer(due: due, fire: fire)
        if !started {
            started = true
            let thread = Thread { [self] in sweep() }
            thread.name = "canopy-deadlines"
            thread.start()
        } else if timers.count == 1 {
            condition.signal()
        }
        return nextID
    }

    /// Disarms a timer; nothing if it has fired or was disarmed.
    func disarm(_ id: UInt64) {
        condition.lock()
        timers.removeValue(forKey: id)
        condition.unlock()
    }

    private func sweep() {
        while true {
            condition.lock()
            while timers.isEmpty { condition.wait() }
            condition.unlock()
            Thread.sleep(forTimeInterval: tick)
            let now = ContinuousClock.now
            condition.lock()
            let ids = timers.compactMap { $0.value.due <= now ? $0.key : nil }
            let due = ids.compactMap { timers.removeValue(forKey: $0)?.fire }
            condition.unlock()
            for fire in due { fire() }
        }
    }
}

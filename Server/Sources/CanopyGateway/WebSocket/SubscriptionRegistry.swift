import Synchronization

/// The subscriptions one socket runs, by the client's ids. Each start gets
/// a generation, so a task that outlives its id (completed, then the id
/// reused) can tell it is no longer the current one and stays quiet.
final class SubscriptionRegistry: Sendable {
    /// Subscriptions one socket may hold at once.
    static let maximum = 64

    enum Start { case started, duplicate, tooMany, tooManyForUser }

    private struct Running {
        var generation: Int
        var task: Task<Void, Never>
    }

    private struct State {
        var running: [String: Running] = [:]
        var generations = 0
    }

    private let state = Mutex(State())

    /// Starts `id` unless it runs already or a limit is reached;
    /// `admitForUser` counts it against the user's limit (false: refused).
    func start(_ id: String, admitForUser: () -> Bool, run: @escaping @Sendable (_ generation: Int) async -> Void) -> Start {
        state.withLock { state in
            guard state.running[id] == nil else { return .duplicate }
            guard state.running.count < Self.maximum else { return .tooMany }
            guard admitForUser() else { return .tooManyForUser }
            state.generations += 1
            let generation = state.generations
            state.running[id] = Running(generation: generation, task: Task { await run(generation) })
            return .started
        }
    }

    /// The client's `complete`: cancels `id`, if it runs.
    func complete(_ id: String) {
        state.withLock { $0.running.removeValue(forKey: id) }?.task.cancel()
    }

    /// Whether `id` is still the subscription started as `generation`.
    func isCurrent(_ id: String, _ generation: Int) -> Bool {
        state.withLock { $0.running[id]?.generation == generation }
    }

    /// Frees `id` when it is still `generation` (a feed that failed); true if it was.
    func finish(_ id: String, _ generation: Int) -> Bool {
        state.withLock { state in
            guard state.running[id]?.generation == generation else { return false }
            state.running.removeValue(forKey: id)
            return true
        }
    }

    /// The socket ended: cancels every subscription.
    func cancelAll() {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            defer { state.running = [:] }
            return state.running.values.map(\.task)
        }
        for task in tasks { task.cancel() }
    }
}

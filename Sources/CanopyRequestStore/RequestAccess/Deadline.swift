import PostgresNIO
import Synchronization

/// Runs `body`, failing with `StoreError.databaseUnavailable` after
/// `timeout`. The caller is answered at the deadline even when `body` does
/// not end on cancellation (PostgresNIO does not interrupt a statement the
/// server is still running, such as a commit waiting for a synchronous
/// standby): `body` is cancelled and left to finish on its own.
public func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await Deadline.race(body) {
        try await Task.sleep(for: timeout)
        throw StoreError(.databaseUnavailable, "the database did not answer within \(timeout)")
    }
}

extension PostgresClient {
    /// Runs `body` on a pooled connection, failing with `databaseUnavailable`
    /// when no connection is had within `lease`, or no answer within
    /// `answer` after that: PostgresNIO's pool would wait about a minute
    /// for a server that is gone (DECISIONS 50).
    func withConnection<Result: Sendable>(
        within lease: Duration, answerWithin answer: Duration,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let leased = Deadline.Flag()
        return try await Deadline.race({
            try await self.withConnection { connection in
                leased.value.store(true, ordering: .relaxed)
                return try await body(connection)
            }
        }, timer: {
            try await Task.sleep(for: lease)
            if !leased.value.load(ordering: .relaxed) {
                throw StoreError(.databaseUnavailable, "no connection to the database within \(lease)")
            }
            try await Task.sleep(for: answer)
            throw StoreError(.databaseUnavailable, "the database did not answer within \(lease + answer)")
        })
    }
}

/// The race behind both: whichever of the work and the timer ends first
/// answers the caller; the other is cancelled and not waited for.
enum Deadline {
    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// One race: the caller's continuation (resumed once) and both tasks.
    private final class Race<T: Sendable>: Sendable {
        struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var tasks: [Task<Void, Never>] = []
            var finished = false
        }

        let state = Mutex(State())

        /// False when the caller was cancelled before the race began (it is
        /// then answered at once).
        func start(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
            let over = state.withLock { state -> Bool in
                if !state.finished { state.continuation = continuation }
                return state.finished
            }
            if over { continuation.resume(throwing: CancellationError()) }
            return !over
        }

        /// Keeps the tasks to cancel, or cancels them now if it is over.
        func hold(_ tasks: [Task<Void, Never>]) {
            let over = state.withLock { state -> Bool in
                if !state.finished { state.tasks = tasks }
                return state.finished
            }
            if over { tasks.forEach { $0.cancel() } }
        }

        func finish(_ result: Result<T, any Error>) {
            let (continuation, tasks) = state.withLock { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>]) in
                guard !state.finished else { return (nil, []) }
                state.finished = true
                defer { state.continuation = nil; state.tasks = [] }
                return (state.continuation, state.tasks)
            }
            continuation?.resume(with: result)
            tasks.forEach { $0.cancel() }
        }
    }

    /// Runs `work` against `timer`, which sleeps and then throws.
    static func race<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T,
        timer: @escaping @Sendable () async throws -> Void
    ) async throws -> T {
        let race = Race<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                guard race.start(continuation) else { return }
                let workTask = Task {
                    do {
                        race.finish(.success(try await work()))
                    } catch {
                        race.finish(.failure(error))
                    }
                }
                let timerTask = Task {
                    do {
                        try await timer()
                    } catch is CancellationError {
                        return
                    } catch {
                        race.finish(.failure(error))
                    }
                }
                race.hold([workTask, timerTask])
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

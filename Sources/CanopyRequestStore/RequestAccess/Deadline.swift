import PostgresNIO
import Synchronization

/// Runs `body`, failing with `StoreError.databaseUnavailable` after
/// `timeout`. The caller is answered at the deadline even when `body` does
/// not end on cancellation (PostgresNIO does not interrupt a statement the
/// server is still running, such as a commit waiting for a synchronous
/// standby): `body` is cancelled and left to finish on its own.
public func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await Deadline.race(body, stages: [
        .init(after: timeout) { StoreError(.databaseUnavailable, "the database did not answer within \(timeout)") },
    ])
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
        }, stages: [
            .init(after: lease) {
                leased.value.load(ordering: .relaxed) ? nil : StoreError(.databaseUnavailable, "no connection to the database within \(lease)")
            },
            .init(after: answer) { StoreError(.databaseUnavailable, "the database did not answer within \(lease + answer)") },
        ])
    }
}

/// The race behind both: whichever of the work and the timer ends first
/// answers the caller; the work is cancelled and not waited for, the timer
/// disarmed (``DeadlineSweeper``).
enum Deadline {
    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// A stage of a race's timer: `after` the previous stage (or the
    /// start), `failure` says what the caller is answered, or nil to go on
    /// to the next stage.
    struct Stage: Sendable {
        let after: Duration
        let failure: @Sendable () -> (any Error)?

        init(after: Duration, failure: @escaping @Sendable () -> (any Error)?) {
            self.after = after
            self.failure = failure
        }
    }

    /// One race: the caller's continuation (resumed once), the work's task
    /// and the armed timer.
    private final class Race<T: Sendable>: Sendable {
        struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var work: Task<Void, Never>?
            var timer: UInt64?
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

        /// Keeps the work's task to cancel, or cancels it now if it is over.
        func hold(_ work: Task<Void, Never>) {
            let over = state.withLock { state -> Bool in
                if !state.finished { state.work = work }
                return state.finished
            }
            if over { work.cancel() }
        }

        /// Arms the timer for `stages`, the first first.
        func arm(_ stages: ArraySlice<Stage>) {
            guard let stage = stages.first else { return }
            let id = DeadlineSweeper.shared.arm(after: stage.after) { [self] in
                if let error = stage.failure() {
                    self.finish(.failure(error))
                } else {
                    self.arm(stages.dropFirst())
                }
            }
            let over = state.withLock { state -> Bool in
                if !state.finished { state.timer = id }
                return state.finished
            }
            if over { DeadlineSweeper.shared.disarm(id) }
        }

        func finish(_ result: Result<T, any Error>) {
            let (continuation, work, timer) = state.withLock { state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?, UInt64?) in
                guard !state.finished else { return (nil, nil, nil) }
                state.finished = true
                defer { state.continuation = nil; state.work = nil; state.timer = nil }
                return (state.continuation, state.work, state.timer)
            }
            if let timer { DeadlineSweeper.shared.disarm(timer) }
            continuation?.resume(with: result)
            work?.cancel()
        }
    }

    /// Runs `work` against a timer of `stages`.
    static func race<T: Sendable>(
        _ work: @escaping @Sendable () async throws -> T,
        stages: [Stage]
    ) async throws -> T {
        let race = Race<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                guard race.start(continuation) else { return }
                race.arm(stages[...])
                race.hold(Task {
                    do {
                        race.finish(.success(try await work()))
                    } catch {
                        race.finish(.failure(error))
                    }
                })
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }
}

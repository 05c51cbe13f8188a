import Logging
import NIOCore
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
    ///
    /// A connection still busy at the deadline is closed before the caller
    /// is answered (DECISIONS 128): its link may be dead (a partition keeps
    /// a TCP connection open for a quarter of an hour) or its server frozen,
    /// so it goes back to the pool as nothing, and whatever it was doing
    /// ends with it (a transaction whose COMMIT was not sent rolls back).
    func withConnection<Result: Sendable>(
        within lease: Duration, answerWithin answer: Duration,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let leased = Deadline.Lease()
        return try await Deadline.race({
            try await self.withConnection { connection in
                leased.hold(connection)
                defer { leased.release() }
                return try await body(connection)
            }
        }, stages: [
            .init(after: lease) {
                leased.wasHeld ? nil : StoreError(.databaseUnavailable, "no connection to the database within \(lease)")
            },
            .init(after: answer) {
                leased.closeIfHeld()
                return StoreError(.databaseUnavailable, "the database did not answer within \(lease + answer)")
            },
        ])
    }

    /// One statement on a pooled connection, within `timeout` for the
    /// connection and again for the answer (closed past it, as above): for
    /// probes, which must not leave a connection waiting on a dead link.
    func query(_ query: PostgresQuery, within timeout: Duration, logger: Logger) async throws -> [PostgresRow] {
        try await withConnection(within: timeout, answerWithin: timeout) { connection in
            try await connection.query(query, logger: logger).collect()
        }
    }
}

/// The race behind both: whichever of the work and the timer ends first
/// answers the caller; the work is cancelled and not waited for, the timer
/// disarmed (``DeadlineSweeper``).
enum Deadline {
    /// The connection a call holds, for its deadline to close: set when the
    /// pool lends it, cleared (under the same lock) before it goes back, so
    /// a deadline never closes a connection another call has since borrowed.
    final class Lease: Sendable {
        private struct State {
            var connection: PostgresConnection?
            var held = false
        }

        private let state = Mutex(State())

        func hold(_ connection: PostgresConnection) {
            state.withLock { $0.connection = connection; $0.held = true }
        }

        func release() {
            state.withLock { $0.connection = nil }
        }

        var wasHeld: Bool { state.withLock { $0.held } }

        func closeIfHeld() {
            state.withLock { state in
                if let connection = state.connection {
                    state.connection = nil
                    let closing: EventLoopFuture<Void> = connection.close()
                    _ = closing
                }
            }
        }
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
            // The work is cancelled before the caller hears: a transaction
            // that has not sent its COMMIT by then never will (CommitWatch).
            work?.cancel()
            continuation?.resume(with: result)
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
                // On the request's loop when it is pinned there
                // (ServingLoops): the work's rows then resume it in place.
                race.hold(Task(executorPreference: ServingLoops.pinned) {
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

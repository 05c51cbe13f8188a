import NIOCore

/// The event loops a gateway serves on with `--serve-on-loop` (issue 69):
/// a request runs on the loop that owns its socket, and reaches the
/// database through a pool whose connections live on that same loop
/// (``PrimaryPool``), so its work does not cross threads between the
/// socket, Swift concurrency's pool and the database connection.
public final class ServingLoops: Sendable {
    /// The loops, in the group's order.
    public let loops: [any EventLoop]
    private let executors: [EventLoopTaskExecutor]

    /// The executor a pinned request runs on (``pin(_:_:)``), read where
    /// work is started in a task of its own (``Deadline``): an unstructured
    /// task does not inherit an executor preference, but does inherit this.
    @TaskLocal public static var pinned: EventLoopTaskExecutor?

    /// Whether ``pin(_:_:)`` sets a task executor preference. Not when
    /// Swift concurrency's global executor is these loops themselves
    /// (`--concurrency-on-loops`): a job then stays on the loop it was
    /// enqueued from, so a connection's task is on its socket's loop once
    /// it has read from it, with no preference to look up on every hop.
    public let pinsTasks: Bool

    public init(group: any EventLoopGroup, pinsTasks: Bool = true) {
        var loops: [any EventLoop] = []
        for loop in group.makeIterator() { loops.append(loop) }
        self.loops = loops
        self.pinsTasks = pinsTasks
        executors = loops.map(EventLoopTaskExecutor.init)
    }

    /// The index of the loop running the caller; nil off every loop.
    var current: Int? {
        loops.firstIndex { $0.inEventLoop }
    }

    /// Runs `body` on `loop` (one of ours; else where it is), its database
    /// work on `loop`'s pool.
    public func pin<T: Sendable>(_ loop: any EventLoop, _ body: () async throws -> T) async rethrows -> T {
        guard pinsTasks, let index = loops.firstIndex(where: { $0 === loop }) else { return try await body() }
        let executor = executors[index]
        return try await withTaskExecutorPreference(executor) {
            try await Self.$pinned.withValue(executor) { try await body() }
        }
    }
}

/// Runs a task's jobs on one event loop: Swift concurrency's work for a
/// request stays on the thread that owns its socket and its connections.
/// (NIO's loops are serial executors, for actors, not task executors.)
public final class EventLoopTaskExecutor: TaskExecutor, Sendable {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

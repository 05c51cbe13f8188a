import ArgumentParser
import Foundation

/// `canopy serve`'s connections to PostgreSQL (docs/DEPLOYMENT.md,
/// "Connections"): few enough that the database's cores are not shared by
/// more running statements than they can run, which is what keeps the
/// tail short (issue 39; DECISIONS 96).
struct PoolOptions: ParsableArguments {
    /// Two a core of this machine and one for the change listener, at least
    /// five: on 2 cores, 5; on 8, 17. A request past them waits in the
    /// gateway's queue, in order, instead of in the kernel's run queue.
    static var defaultConnections: Int { max(5, 2 * ProcessInfo.processInfo.activeProcessorCount + 1) }

    @Option(name: .customLong("database-connections"), help: ArgumentHelp(
        "Connections to the primary (and to each replica) for requests, the change listener included (env CANOPY_DATABASE_CONNECTIONS; default twice this machine's cores plus one, at least 5). More only helps when the database has more cores than this machine, or statements wait on locks; see docs/DEPLOYMENT.md.",
        valueName: "count"))
    var connections: Int = Int(ProcessInfo.processInfo.environment["CANOPY_DATABASE_CONNECTIONS"] ?? "") ?? Self.defaultConnections

    @Option(name: .customLong("statement-timeout"), help: ArgumentHelp(
        "Seconds a statement may run (PostgreSQL's statement_timeout); a database call gets this and 2 s more to answer before the request is answered 503 and its connection closed (env CANOPY_STATEMENT_TIMEOUT; default 10). See docs/RELIABILITY.md, \"Network faults\".",
        valueName: "seconds"))
    var statementTimeout: Double = Double(ProcessInfo.processInfo.environment["CANOPY_STATEMENT_TIMEOUT"] ?? "") ?? 10

    @Option(name: .customLong("availability-timeout"), help: ArgumentHelp(
        "Seconds a request waits for a connection to the database (a new one's TCP connect included) before it is answered 503 with Retry-After (env CANOPY_AVAILABILITY_TIMEOUT; default 5).",
        valueName: "seconds"))
    var availabilityTimeout: Double = Double(ProcessInfo.processInfo.environment["CANOPY_AVAILABILITY_TIMEOUT"] ?? "") ?? 5

    @Option(name: .customLong("listener-heartbeat"), help: ArgumentHelp(
        "Seconds between checks of the connection that listens for changes (for live subscriptions and push); one that does not answer within as long again is replaced, and every subscriber catches up from its position (env CANOPY_LISTENER_HEARTBEAT; default 5).",
        valueName: "seconds"))
    var listenerHeartbeat: Double = Double(ProcessInfo.processInfo.environment["CANOPY_LISTENER_HEARTBEAT"] ?? "") ?? 5

    @Flag(name: .customLong("serve-on-loop"), inversion: .prefixedNo, help: ArgumentHelp(
        "Serve each connection's requests on the event loop that owns its socket, each loop with database connections of its own (issue 69; env CANOPY_SERVE_ON_LOOP=1; default off: requests run on Swift's shared pool). See docs/DEPLOYMENT.md, \"Serving on the sockets' loops\"."))
    var serveOnLoop: Bool = ProcessInfo.processInfo.environment["CANOPY_SERVE_ON_LOOP"] == "1"

    @Flag(name: .customLong("concurrency-on-loops"), inversion: .prefixedNo, help: ArgumentHelp(
        "Run Swift concurrency itself on the event loops that own the sockets and database connections, so a request's work mostly stays on one thread (issue 69; env CANOPY_CONCURRENCY_ON_LOOPS=1; default off). Process-wide; Linux only. See docs/DEPLOYMENT.md, \"Swift concurrency on the loops\"."))
    var concurrencyOnLoops: Bool = ProcessInfo.processInfo.environment["CANOPY_CONCURRENCY_ON_LOOPS"] == "1"

    @Option(name: .customLong("loop-connections"), help: ArgumentHelp(
        "With --serve-on-loop: connections each event loop may open to the primary, beside --database-connections' shared pool (env CANOPY_LOOP_CONNECTIONS; default 2).",
        valueName: "count"))
    var loopConnections: Int = Int(ProcessInfo.processInfo.environment["CANOPY_LOOP_CONNECTIONS"] ?? "") ?? 2

    func validate() throws {
        guard loopConnections >= 1, loopConnections <= 1000 else {
            throw ValidationError("--loop-connections must be from 1 to 1000, got \(loopConnections)")
        }
        guard connections >= 2 else {
            throw ValidationError("--database-connections must be 2 or more (one is the change listener's), got \(connections)")
        }
        for (flag, value) in [("--statement-timeout", statementTimeout), ("--availability-timeout", availabilityTimeout), ("--listener-heartbeat", listenerHeartbeat)] {
            guard value.isFinite, value >= 0.1, value <= 3600 else {
                throw ValidationError("\(flag) must be a number of seconds from 0.1 to 3600, got \(value)")
            }
        }
    }
}

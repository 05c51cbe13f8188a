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

    func validate() throws {
        guard connections >= 2 else {
            throw ValidationError("--database-connections must be 2 or more (one is the change listener's), got \(connections)")
        }
    }
}

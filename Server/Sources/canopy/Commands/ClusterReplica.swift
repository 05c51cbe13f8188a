import ArgumentParser
import CanopyAdmin
import CanopyRequestStore

/// `canopy cluster replica NAME`: a streaming replica of the embedded
/// cluster, for running a primary and replicas on one machine.
struct ClusterReplica: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica",
        abstract: "Make (first time) and start a streaming replica of the embedded cluster.",
        discussion: """
            The replica is a hot standby under <data-dir>/replicas/NAME, copied with pg_basebackup -R and \
            streaming the primary's WAL; it answers reads on its own socket and port. `canopy cluster stop` \
            stops the replicas with the primary. See docs/DEPLOYMENT.md.
            """
    )

    @Argument(help: "The replica's name: 1-32 of a-z, 0-9 and _ (it reports to the primary under it).")
    var name: String

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        do {
            let primary = EmbeddedCluster(dataDirectory: database.setup.dataDirectory)
            let running = try await primary.startReplica(named: name, logger: database.logger("canopy.cluster"))
            let replica = primary.replica(named: name)
            print("replica \(name) running on port \(running.port), socket in \(replica.socketDirectory), log \(replica.logFile)")
            print("read-only admin: \(running.adminEndpoint.displayURL)")
        } catch {
            throw fail(error)
        }
    }
}

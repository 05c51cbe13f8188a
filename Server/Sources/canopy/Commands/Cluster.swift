import ArgumentParser
import CanopyAdmin
import CanopyRequestStore

/// `canopy cluster`: the embedded PostgreSQL cluster.
struct Cluster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start, stop or inspect the embedded PostgreSQL cluster in --data-dir.",
        discussion: "Other commands start the cluster when they need it and leave it running for the next one.",
        subcommands: [ClusterStart.self, ClusterStatus.self, ClusterStop.self, ClusterReplica.self]
    )
}

/// `canopy cluster start`.
struct ClusterStart: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Initialise (first time) and start the cluster.",
        discussion: """
            With --citus, a fresh --data-dir becomes a Citus cluster: this cluster as the coordinator and \
            --workers more under workers/<n>/, all on Unix sockets only between them (docs/CITUS.md). \
            Every later start, by any command, starts the workers too. Canopy's tables stay on the coordinator \
            until `canopy migrate up --distribute`.
            """
    )
    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Make a fresh data directory a Citus cluster: a coordinator and --workers workers (Citus 13 must be installed).")
    var citus = false

    @Option(help: "With --citus: how many workers (1-16; default 2). A cluster may grow; the new workers join at this start.")
    var workers: Int?

    func validate() throws {
        if workers != nil && !citus {
            throw ValidationError("--workers is for a Citus cluster: add --citus")
        }
    }

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        do {
            let cluster = EmbeddedCluster(dataDirectory: database.setup.dataDirectory)
            if citus {
                try cluster.makeCitus(workers: workers ?? 2)
            }
            let running = try await cluster.start(logger: database.logger("canopy.cluster"))
            print("running on port \(running.port), socket in \(cluster.socketDirectory), log \(cluster.logFile)")
            print("admin: \(running.adminEndpoint.displayURL)")
            for worker in running.citusWorkers {
                print("citus worker \(worker.number): port \(worker.port), socket in \(worker.socketDirectory)")
            }
        } catch {
            throw fail(error)
        }
    }
}

/// `canopy cluster status`.
struct ClusterStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Say whether the cluster runs, and where.")
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        do {
            let cluster = EmbeddedCluster(dataDirectory: database.setup.dataDirectory)
            if let port = try cluster.status() {
                print("running on port \(port), socket in \(cluster.socketDirectory), log \(cluster.logFile)")
                for worker in try cluster.citusWorkerStatus() {
                    print("citus worker \(worker.number): " + (worker.port.map { "port \($0), socket in \(worker.socketDirectory)" } ?? "not running"))
                }
            } else {
                print("not running (\(cluster.pgData))")
                throw ExitCode(3)
            }
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(error)
        }
    }
}

/// `canopy cluster stop`.
struct ClusterStop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop the cluster, its replicas and its Citus workers (fast shutdown).")
    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Stop the primary as a power cut would (pg_ctl's immediate mode: no checkpoint, the next start replays the WAL), for crash drills; replicas keep running.")
    var immediate = false

    func run() async throws {
        CommandLogging.bootstrap(verbose: database.verbose)
        do {
            try await EmbeddedCluster(dataDirectory: database.setup.dataDirectory)
                .stop(logger: database.logger("canopy.cluster"), mode: immediate ? .immediate : .fast)
            print("stopped")
        } catch {
            throw fail(error)
        }
    }
}

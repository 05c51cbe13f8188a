import ArgumentParser
import NIOCore
import NIOPosix

/// The process's entry: `canopy serve` first makes NIO's event loops Swift
/// concurrency's executor, so a request's tasks run on the loop that reads
/// its socket instead of hopping to a dispatch worker and back (issue 18:
/// those hops, each a futex wake, were a third of the gateway's CPU). Only
/// for `serve`: other commands block on subprocesses (initdb, pg_ctl,
/// psql), which must not hold an event loop.
@main
enum CanopyMain {
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "serve" {
            NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        }
        await Canopy.main()
    }
}

/// The `canopy` command: serve the gateway, migrate the schema, manage users,
/// and look at the data as a given user.
struct Canopy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canopy",
        abstract: "CloudKit-style zones, records and sharing on PostgreSQL.",
        discussion: """
            Every command takes --database-url (or CANOPY_DATABASE_URL). With neither, it uses \
            an embedded PostgreSQL cluster in --data-dir (default ./.canopy), which it initialises \
            and starts itself.
            """,
        subcommands: [Serve.self, Migrate.self, Schema.self, Users.self, Psql.self, Cluster.self]
    )
}

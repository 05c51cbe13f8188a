import ArgumentParser
import CanopyKit
import Foundation

/// `fasting`: the seed's fasting log as a command-line app, built on
/// CanopyKit alone (docs/CANOPYKIT.md walks it through). Each person runs
/// it with their own token and profile; the log lives in the zone
/// "Fasting", shared with others by email, synced with two SyncEngines.
@main
struct Fasting: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A fasting log kept in Canopy and shared with others.",
        discussion: """
            Set FASTING_SERVER (default http://127.0.0.1:8080) and FASTING_TOKEN, or pass --server and --token.
            The local copy and sync state live in FASTING_HOME (default ~/.fasting), one file per --profile.
            """,
        subcommands: [Add.self, List.self, ShareLog.self, Accept.self, Sync.self]
    )
}

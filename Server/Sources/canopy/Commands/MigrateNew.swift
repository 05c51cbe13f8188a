import ArgumentParser
import CanopyAdmin
import CanopyRequestStore
import Logging

/// `canopy migrate new NAME`: starts the next migration file.
struct MigrateNew: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Create migrations/NNNN_NAME.sql with the next number."
    )

    @Argument(help: "Lower-case words joined by _, e.g. add_contacts_index.")
    var name: String

    @OptionGroup var migrations: MigrationsOptions

    func run() async throws {
        do {
            let path = try migrations.migrator(logger: Logger(label: "canopy.migrate")).create(name: name)
            print(path)
        } catch {
            throw fail(error)
        }
    }
}

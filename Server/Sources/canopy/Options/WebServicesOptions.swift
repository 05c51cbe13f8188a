import ArgumentParser
import CanopyGateway
import CanopyRequestStore
import Foundation

/// `canopy serve`'s CloudKit Web Services container (docs/WEB_SERVICES.md):
/// which container and environment `/database/1/…` answers as.
struct WebServicesOptions: ParsableArguments {
    @Option(name: .customLong("container"), help: ArgumentHelp(
        "Answer CloudKit Web Services (/database/1/CONTAINER/ENVIRONMENT/…) as this container, as iCloud.com.example.app; without it /database/1/ is not served (env CANOPY_CONTAINER).",
        valueName: "id"))
    var container: String?

    @Option(name: .customLong("environment"), help: ArgumentHelp(
        "The container's environment this deployment is: production (default) or development. A request naming the other is refused; run a second deployment over a second database for it (env CANOPY_ENVIRONMENT).",
        valueName: "name"))
    var environment: String?

    private var containerText: String? {
        container ?? ProcessInfo.processInfo.environment["CANOPY_CONTAINER"].flatMap { $0.isEmpty ? nil : $0 }
    }

    private var environmentText: String {
        environment ?? ProcessInfo.processInfo.environment["CANOPY_ENVIRONMENT"].flatMap { $0.isEmpty ? nil : $0 } ?? "production"
    }

    func validate() throws {
        _ = try settings()
    }

    func settings() throws -> WebServicesSettings? {
        guard let environment = WebServicesSettings.Environment(rawValue: environmentText) else {
            throw ValidationError("--environment must be production or development, not '\(environmentText.prefix(40))'")
        }
        guard let container = containerText else {
            if self.environment != nil { throw ValidationError("--environment needs --container") }
            return nil
        }
        guard ContainerIdentifier.isValid(container) else {
            throw ValidationError("--container '\(container.prefix(80))' is not a container identifier: letters, digits, '.', '-' and '_', starting with a letter or digit (iCloud.com.example.app)")
        }
        return WebServicesSettings(container: container, environment: environment)
    }
}

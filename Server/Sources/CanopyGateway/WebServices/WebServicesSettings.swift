/// Which CloudKit container a deployment answers as, and in which
/// environment: every Web Services path names both
/// (`/database/1/{container}/{environment}/…`). One deployment is one
/// container in one environment (docs/WEB_SERVICES.md, DECISIONS 85): a
/// team keeps `development` apart from `production` by running two
/// deployments over two databases, as CloudKit keeps the two apart, so no
/// request can reach the other environment's data by a word in its path.
public struct WebServicesSettings: Sendable, Equatable {
    /// CloudKit's two environments.
    public enum Environment: String, Sendable, CaseIterable {
        case development
        case production
    }

    /// The container identifier, as clients write it (`iCloud.com.example.app`).
    public var container: String
    public var environment: Environment
    /// How long a web courier's long poll waits for a notification before
    /// it answers 204 and the page polls again (docs/WEB_SERVICES.md,
    /// "Notifications"), and how often it looks meanwhile.
    public var courierWait: Duration = .seconds(25)
    public var courierInterval: Duration = .seconds(1)
    /// How old a web auth token's secret gets before an answer replaces it,
    /// and how long the replaced one still holds (docs/WEB_SERVICES.md,
    /// "The web token rotates").
    public var webTokenRotationAge: Duration = .seconds(60)
    public var webTokenOverlap: Duration = .seconds(300)

    public init(container: String, environment: Environment = .production) {
        self.container = container
        self.environment = environment
    }
}

import CanopyPlanner

/// Every operation of the reference this server answers, by its subpath
/// after the database (`records/query`), with the databases it is open in;
/// and the reference's operations it does not answer, which are refused
/// by name, with why, rather than as unknown (docs/WEB_SERVICES.md lists each).
enum WebServicesEndpoints {
    typealias Handler = @Sendable (WebServicesCall) async throws -> WebServicesBody

    struct Endpoint: Sendable {
        var databases: Set<String>
        var handler: Handler
        /// Whether it needs a signed-in user (a web auth token) in every
        /// database; otherwise only outside `public`. `""` in `databases`:
        /// the operation's path has no database (`tokens/register`).
        var needsUser = false

        init(databases: Set<String>, handler: @escaping Handler, needsUser: Bool = false) {
            self.databases = databases
            self.handler = handler
            self.needsUser = needsUser
        }

        /// An endpoint that answers a dictionary.
        init(databases: Set<String>, handler: @escaping @Sendable (WebServicesCall) async throws -> [String: JSONValue], needsUser: Bool = false) {
            self.init(databases: databases, handler: { WebServicesBody(try await handler($0)) }, needsUser: needsUser)
        }
    }

    static let all: Set<String> = ["public", "private", "shared"]
    static let privateAndShared: Set<String> = ["private", "shared"]

    static let served: [String: Endpoint] = [
        "records/query": Endpoint(databases: all, handler: RecordsEndpoints.query),
        "records/lookup": Endpoint(databases: all, handler: RecordsEndpoints.lookup),
        "records/modify": Endpoint(databases: all, handler: RecordsModifyEndpoint.modify),
        "records/changes": Endpoint(databases: privateAndShared, handler: RecordsEndpoints.changes),
        "zones/list": Endpoint(databases: all, handler: ZonesEndpoints.list),
        "zones/lookup": Endpoint(databases: all, handler: ZonesEndpoints.lookup),
        "zones/modify": Endpoint(databases: all, handler: ZonesEndpoints.modify),
        "zones/changes": Endpoint(databases: privateAndShared, handler: ZonesEndpoints.changes),
        "changes/database": Endpoint(databases: privateAndShared, handler: ChangesEndpoints.database),
        "changes/zone": Endpoint(databases: all, handler: ChangesEndpoints.zone),
        "users/current": Endpoint(databases: all, handler: UsersEndpoints.current, needsUser: true),
        "users/caller": Endpoint(databases: all, handler: UsersEndpoints.caller, needsUser: true),
        "records/resolve": Endpoint(databases: all, handler: WebServicesShares.resolve, needsUser: true),
        "records/accept": Endpoint(databases: all, handler: WebServicesShares.accept, needsUser: true),
        "subscriptions/list": Endpoint(databases: all, handler: SubscriptionsEndpoints.list, needsUser: true),
        "subscriptions/lookup": Endpoint(databases: all.union([""]), handler: SubscriptionsEndpoints.lookup, needsUser: true),
        "subscriptions/modify": Endpoint(databases: all, handler: SubscriptionsEndpoints.modify, needsUser: true),
        "tokens/register": Endpoint(databases: [""], handler: SubscriptionsEndpoints.register, needsUser: true),
        "tokens/create": Endpoint(databases: [""], handler: WebServicesCourier.create, needsUser: true),
        "users/discover": Endpoint(databases: all, handler: DiscoveryEndpoints.discover, needsUser: true),
        "users/lookup/email": Endpoint(databases: all, handler: DiscoveryEndpoints.lookupEmail, needsUser: true),
        "users/lookup/id": Endpoint(databases: all, handler: DiscoveryEndpoints.lookupID, needsUser: true),
        "users/lookup/contacts": Endpoint(databases: all, handler: DiscoveryEndpoints.lookupContacts, needsUser: true),
        "assets/upload": Endpoint(databases: ["public", "private"], handler: WebServicesAssets.upload, needsUser: true),
    ]

    /// The reference's operations Canopy does not answer, and why (docs/WEB_SERVICES.md).
    static let notServed: [String: String] = [
        "assets/rereference": "an asset is saved again by giving its receipt (or a new upload's) in the record",
    ]
}

import CanopyPlanner

/// Every operation of the reference this server answers, by its subpath
/// after the database (`records/query`), with the databases it is open in;
/// and the reference's operations it does not answer yet, which are
/// refused by name rather than as unknown (docs/WEB_SERVICES.md lists each).
enum WebServicesEndpoints {
    typealias Handler = @Sendable (WebServicesCall) async throws -> [String: JSONValue]

    struct Endpoint: Sendable {
        var databases: Set<String>
        var handler: Handler
        /// Whether it needs a signed-in user (a web auth token) in every
        /// database; otherwise only outside `public`.
        var needsUser = false
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
        "assets/upload": Endpoint(databases: ["public", "private"], handler: WebServicesAssets.upload, needsUser: true),
    ]

    /// The reference's operations not answered yet.
    static let notYetServed: Set<String> = [
        "subscriptions/list", "subscriptions/lookup", "subscriptions/modify",
        "users/discover", "users/lookup/email", "users/lookup/id", "users/lookup/contacts", "assets/rereference",
        "tokens/create", "tokens/register",
    ]
}

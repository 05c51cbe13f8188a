import CanopyPlanner

/// One operation of `zones/modify`: `{"operationType": "create" | "delete",
/// "zone": {"zoneID": …}}`, read and checked, naming where a wrong one is.
public struct WebServicesZoneOperation: Sendable, Equatable {
    public enum Action: String, Sendable {
        case create, delete
    }

    public var action: Action
    public var zone: WebServicesZoneID

    /// `operations[index]` of a request to `scope`'s database.
    public init(_ item: JSONValue, at place: String, scope: DatabaseScope) throws(QueryError) {
        guard case .object(let operation) = item, case .string(let type)? = operation["operationType"], let action = Action(rawValue: type) else {
            throw QueryError(.badRequest, "\(place).operationType must be create or delete")
        }
        guard case .object(let zone)? = operation["zone"], let zoneID = zone["zoneID"], !zoneID.isNull else {
            throw QueryError(.badRequest, "\(place) needs zone: {\"zoneID\": {\"zoneName\": …}}")
        }
        self.action = action
        self.zone = try WebServicesZoneID.read(zoneID, at: "\(place).zone.zoneID", scope: scope)
    }
}

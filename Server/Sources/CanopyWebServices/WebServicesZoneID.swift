import CanopyPlanner

/// A zone as a Web Services request names it (a zone ID dictionary,
/// `{"zoneName": …, "ownerRecordName": …}`; the default zone when there is
/// none) and as its answers write it back: read once, then handed to the
/// planner as a ``ZoneReference``.
public struct WebServicesZoneID: Sendable, Equatable {
    public var zoneName: String
    /// The zone's owner as the request named it (nil: the caller, or the
    /// public database's zone, whose `__defaultOwner__` is dropped here).
    public var ownerName: String?
    public var scope: DatabaseScope

    public init(zoneName: String = "_defaultZone", ownerName: String? = nil, scope: DatabaseScope) {
        self.zoneName = zoneName
        self.ownerName = scope == .public && ownerName == DatabaseScope.publicOwnerName ? nil : ownerName
        self.scope = scope
    }

    /// The zone ID dictionary at `place` in `scope`'s database, checked:
    /// what is wrong is named with where it is.
    public static func read(_ value: JSONValue?, at place: String = "zoneID", scope: DatabaseScope) throws(QueryError) -> WebServicesZoneID {
        var zoneName = "_defaultZone"
        var owner: String?
        switch value {
        case nil, .null?: break
        case .object(let zoneID)?:
            zoneName = try WebServicesRequestBody.string(zoneID["zoneName"], at: "\(place).zoneName") ?? zoneName
            owner = try WebServicesRequestBody.string(zoneID["ownerRecordName"], at: "\(place).ownerRecordName")
        case let other?:
            throw QueryError(.badRequest, "\(place) must be a zone ID dictionary, {\"zoneName\": …}, not \(other.typeName)")
        }
        return WebServicesZoneID(zoneName: zoneName, ownerName: owner, scope: scope)
    }

    /// The zone in the planner's terms, checked as GraphQL's `zone` is.
    public var reference: ZoneReference {
        get throws(QueryError) { try ZoneReference(scope: scope, zoneName: zoneName, ownerName: ownerName) }
    }

    /// The reference's zone ID dictionary of this zone, as answers carry it
    /// (the public zone's owner is `__defaultOwner__`). The plans write the
    /// same dictionary in SQL (`Projection.cloudKitZoneID`).
    public var dictionary: JSONValue {
        var dictionary: [String: JSONValue] = [
            "zoneName": .string(zoneName),
            "zoneType": .string(zoneName == "_defaultZone" ? "DEFAULT_ZONE" : "REGULAR_CUSTOM_ZONE"),
        ]
        if scope == .public {
            dictionary["ownerRecordName"] = .string(DatabaseScope.publicOwnerName)
        } else if let ownerName {
            dictionary["ownerRecordName"] = .string(ownerName)
        }
        return .object(dictionary)
    }
}

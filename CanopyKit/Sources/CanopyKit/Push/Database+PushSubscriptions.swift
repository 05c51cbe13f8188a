import Foundation

/// Subscriptions kept on the server (docs/API.md §14; CKDatabase's
/// save(_:)/deleteSubscription(withID:)/allSubscriptions()). Each lives in
/// the database it was saved in: the private one watches the user's own
/// zones, the shared one the zones shared with them.
extension Database {
    /// Saves a subscription, replacing one of the same ID
    /// (CKDatabase.save(_ subscription:)); answers it as the server keeps it.
    /// A predicate is checked against the record type's schema:
    /// `.invalidArguments` says what was wrong.
    @discardableResult
    public func save(_ subscription: Subscription) async throws -> Subscription {
        // Variables left out take the field's defaults (an explicit null would not).
        var variables: [String: JSON] = ["id": .string(subscription.subscriptionID), "scope": scopeJSON]
        switch subscription.kind {
        case .database:
            variables["kind"] = .string("DATABASE")
        case .recordZone(let zoneID):
            try requireSharedOwner(zoneID)
            variables["kind"] = .string("ZONE")
            variables["zone"] = zoneID.json
        case .query(let recordType, let predicate, let zoneID, let options):
            guard !options.isEmpty else {
                throw CanopyError(.invalidArguments, "a query subscription must fire on at least one of creation, update or deletion")
            }
            if let zoneID { try requireSharedOwner(zoneID) }
            variables["kind"] = .string("QUERY")
            if let zoneID { variables["zone"] = zoneID.json }
            variables["type"] = .string(recordType)
            if !predicate.isTrue {
                variables["filter"] = .string(predicate.format)
                variables["args"] = try predicate.argumentsJSON(in: zoneID ?? .default)
            }
            variables["firesOn"] = options.json
        }
        let data = try await transport.execute(Documents.saveSubscription, variables)
        return try decodeSubscription(data["saveSubscription"])
    }

    /// Deletes a subscription (CKDatabase.deleteSubscription(withID:));
    /// `.unknownItem` when there is none of that ID.
    public func deleteSubscription(withID subscriptionID: Subscription.ID) async throws {
        _ = try await transport.execute(Documents.deleteSubscription, ["id": .string(subscriptionID)])
    }

    /// This database's subscriptions (CKDatabase.allSubscriptions()).
    public func allSubscriptions() async throws -> [Subscription] {
        let data = try await transport.execute(Documents.subscriptions)
        return try (data["subscriptions"]?.array ?? [])
            .filter { $0["scope"]?.string == databaseScope.rawValue }
            .map { try decodeSubscription($0) }
    }

    /// One subscription (CKDatabase.subscription(for:)); `.unknownItem` when there is none.
    public func subscription(for subscriptionID: Subscription.ID) async throws -> Subscription {
        guard let found = try await allSubscriptions().first(where: { $0.subscriptionID == subscriptionID }) else {
            throw CanopyError(.unknownItem, "no subscription '\(subscriptionID)' in the \(databaseScope.rawValue.lowercased()) database")
        }
        return found
    }

    private func decodeSubscription(_ json: JSON?) throws -> Subscription {
        guard let json, let id = json["subscriptionID"]?.string, let kind = json["kind"]?.string else {
            throw CanopyError(.serverResponseLost, "a subscription without its ID or kind")
        }
        let zoneID = self.zoneID(fromServer: json["zone"])
        switch kind {
        case "DATABASE":
            return .database(subscriptionID: id)
        case "ZONE":
            guard let zoneID else { throw CanopyError(.serverResponseLost, "a zone subscription without its zone") }
            return .recordZone(zoneID, subscriptionID: id)
        case "QUERY":
            guard let recordType = json["recordType"]?.string else {
                throw CanopyError(.serverResponseLost, "a query subscription without its record type")
            }
            let predicate = json["filter"]?.string.map { Predicate(format: $0, json: json["args"], zoneID: zoneID ?? .default) } ?? .all
            return .query(recordType: recordType, predicate: predicate, zoneID: zoneID, subscriptionID: id,
                          options: Subscription.Options(json: json["firesOn"]))
        default:
            throw CanopyError(.serverResponseLost, "a subscription of unknown kind \(kind)")
        }
    }
}

extension Predicate {
    /// A predicate as the server keeps it: its format and its arguments
    /// (an array for `%@`, an object for `$name`).
    init(format: String, json: JSON?, zoneID: RecordZone.ID) {
        self.format = format
        switch json {
        case .array(let values)?:
            arguments = values.compactMap { FieldValue(json: $0, zoneID: zoneID) }
            variables = [:]
        case .object(let members)?:
            arguments = []
            variables = members.compactMapValues { FieldValue(json: $0, zoneID: zoneID) }
        default:
            arguments = []
            variables = [:]
        }
    }
}

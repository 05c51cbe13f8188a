import Foundation

/// A subscription the server keeps (CKSubscription): what should wake the
/// app's devices with a silent push while the app is not running. A push
/// says only which subscriptions fired; the app then fetches the feeds
/// from its change tokens (docs/PUSH.md). Saved with `Database.save(_:)`
/// in the database whose zones it watches.
public struct Subscription: Sendable {
    public typealias ID = String

    /// What a query subscription fires on (CKQuerySubscription.Options).
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let firesOnRecordCreation = Options(rawValue: 1)
        public static let firesOnRecordUpdate = Options(rawValue: 2)
        public static let firesOnRecordDeletion = Options(rawValue: 4)
        public static let all: Options = [.firesOnRecordCreation, .firesOnRecordUpdate, .firesOnRecordDeletion]
    }

    public enum Kind: Sendable {
        /// Any change in any zone of the database (CKDatabaseSubscription).
        case database
        /// Any change in one zone (CKRecordZoneSubscription).
        case recordZone(RecordZone.ID)
        /// Records of one type that match a predicate, in one zone or in
        /// every zone of the database (CKQuerySubscription). A deletion
        /// fires on the record type alone: a deleted record has no values
        /// left to test.
        case query(recordType: String, predicate: Predicate, zoneID: RecordZone.ID?, options: Options)
    }

    public let subscriptionID: ID
    public let kind: Kind

    public init(subscriptionID: ID, kind: Kind) {
        self.subscriptionID = subscriptionID
        self.kind = kind
    }

    /// CKDatabaseSubscription(subscriptionID:).
    public static func database(subscriptionID: ID) -> Subscription {
        Subscription(subscriptionID: subscriptionID, kind: .database)
    }

    /// CKRecordZoneSubscription(zoneID:subscriptionID:).
    public static func recordZone(_ zoneID: RecordZone.ID, subscriptionID: ID) -> Subscription {
        Subscription(subscriptionID: subscriptionID, kind: .recordZone(zoneID))
    }

    /// CKQuerySubscription(recordType:predicate:subscriptionID:options:), in `zoneID` or every zone.
    public static func query(recordType: String, predicate: Predicate = .all, zoneID: RecordZone.ID? = nil,
                             subscriptionID: ID, options: Options = .all) -> Subscription {
        Subscription(subscriptionID: subscriptionID, kind: .query(recordType: recordType, predicate: predicate, zoneID: zoneID, options: options))
    }
}

extension Subscription.Options {
    static let events: [(Subscription.Options, String)] = [
        (.firesOnRecordCreation, "CREATE"), (.firesOnRecordUpdate, "UPDATE"), (.firesOnRecordDeletion, "DELETE"),
    ]

    var json: JSON { .array(Self.events.filter { contains($0.0) }.map { .string($0.1) }) }

    init(json: JSON?) {
        let names = Set(json?.array?.compactMap(\.string) ?? [])
        self = Self.events.reduce(into: []) { options, event in if names.contains(event.1) { options.insert(event.0) } }
    }
}

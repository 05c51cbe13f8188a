import CanopyPlanner
import GraphQL

/// Every root field of `Server/schema/canopy.graphql`'s Query and Mutation types,
/// by name: where a new field is added (a test checks that none is missing).
/// Subscriptions are served over WebSocket (`GraphQLWebSocketSession`).
enum OperationTable {
    static let queries: [String: any RootOperation] = [
        "me": Planned { field, _ in try MePlan(field) },
        "zones": Planned { try ZonesPlan($0, request: $1) },
        "lookup": LookupOperation(),
        "records": RecordsOperation(),
        "zoneChanges": ZoneChangesOperation(),
        "zoneRanges": ZoneRangesOperation(),
        "databaseChanges": DatabaseChangesOperation(),
        "share": Planned { try SharePlan($0, request: $1) },
        "shareMetadata": ShareMetadataOperation(),
        "discoverUser": Planned { try DiscoverUserPlan($0, request: $1) },
        "recordTypes": Planned { try RecordTypesPlan($0, request: $1) },
        "subscriptions": Planned { try SubscriptionsPlan($0, request: $1) },
        "devices": Planned { try DevicesPlan($0, request: $1) },
        "pushConfiguration": PushConfigurationOperation(),
    ]

    static let mutations: [String: any RootOperation] = [
        "saveZone": Planned { try SaveZonePlan($0, request: $1) },
        "deleteZone": Planned { try DeleteZonePlan($0, request: $1) },
        "modifyRecords": ModifyRecordsOperation(),
        "saveShare": ShareMutationOperation(),
        "setParticipant": ShareMutationOperation(),
        "removeParticipant": ShareMutationOperation(),
        "deleteShare": ShareMutationOperation(),
        "leaveShare": ShareMutationOperation(),
        "acceptShare": ShareLinkOperation.accept,
        "requestShareAccess": ShareLinkOperation.requestAccess,
        "approveAccessRequest": ShareMutationOperation(),
        "denyAccessRequest": ShareMutationOperation(),
        "blockAccessRequest": ShareMutationOperation(),
        "unblockRequester": ShareMutationOperation(),
        "moveRecords": MoveRecordsOperation(),
        "issueToken": IssueTokenOperation(),
        "revokeToken": RevokeTokenOperation(),
        "saveSubscription": SaveSubscriptionOperation(),
        "deleteSubscription": Planned { try DeleteSubscriptionPlan($0, request: $1) },
        "registerDevice": RegisterDeviceOperation(),
        "unregisterDevice": Planned { try UnregisterDevicePlan($0, request: $1) },
    ]

    static func operation(_ kind: OperationType, named name: String) -> (any RootOperation)? {
        switch kind {
        case .query: return queries[name]
        case .mutation: return mutations[name]
        case .subscription: return nil
        }
    }
}

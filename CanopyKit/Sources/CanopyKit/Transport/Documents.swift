import Foundation

/// The GraphQL documents CanopyKit sends (docs/API.md §3), written once. Each
/// names its operation, so the gateway's logs and metrics tell them apart.
enum Documents {
    static let recordFields = """
        fragment R on Record { recordName recordType fields(keys: $keys) parent recordChangeTag
          created { timestamp userRecordName } modified { timestamp userRecordName } share { url } }
        """
    static let shareFields = """
        fragment S on Share { url title publicPermission rootRecordName zone { zoneName ownerName }
          allowsAccessRequests type thumbnailImageData
          accessRequests { user { userRecordName name email phone } status requestedAt }
          owner { user { userRecordName name email phone } email phone role permission status isApprovedRequester dateAddedToShare }
          participants { user { userRecordName name email phone } email phone role permission status isApprovedRequester dateAddedToShare } }
        """
    static let metadataFields = """
        fragment M on ShareMetadata { url title ownerName ownerDisplayName rootRecordName role permission status zone { zoneName ownerName }
          allowsAccessRequests accessRequestStatus type thumbnailImageData }
        """

    static let me = "query Me { me { userRecordName name email phone } }"
    static let storageUsage = "query StorageUsage { me { usage { storedBytes fieldBytes assetBytes pendingUploadBytes recordCount quotaBytes } } }"
    static let discoverUser = "query DiscoverUser($email: String, $phone: String) { discoverUser(email: $email, phone: $phone) { userRecordName name email phone } }"
    static let zones = "query Zones($scope: DatabaseScope!) { zones(scope: $scope) { zoneName ownerName share { url } } }"
    static let saveZone = "mutation SaveZone($zoneName: String!) { saveZone(zoneName: $zoneName) { zoneName ownerName share { url } } }"
    static let deleteZone = "mutation DeleteZone($scope: DatabaseScope!, $zone: ZoneID!) { deleteZone(scope: $scope, zone: $zone) }"

    static let lookup = """
        query Lookup($scope: DatabaseScope!, $zone: ZoneID!, $names: [String!]!, $keys: [String!]) {
          lookup(scope: $scope, zone: $zone, recordNames: $names) { recordName record { ...R } error { code message } } }
        """ + recordFields
    static let records = """
        query Records($scope: DatabaseScope!, $zone: ZoneID!, $type: String!, $filter: String, $args: JSON, $sort: [Sort!],
                      $limit: Int, $cursor: String, $keys: [String!]) {
          records(scope: $scope, zone: $zone, recordType: $type, filter: $filter, args: $args, sort: $sort, limit: $limit, cursor: $cursor) {
            records { ...R } cursor } }
        """ + recordFields
    static let modifyRecords = """
        mutation ModifyRecords($scope: DatabaseScope!, $zone: ZoneID!, $save: [RecordInput!], $delete: [String!],
                               $policy: SavePolicy, $atomic: Boolean, $keys: [String!]) {
          modifyRecords(scope: $scope, zone: $zone, save: $save, delete: $delete, savePolicy: $policy, atomic: $atomic) {
            saved { ...R } deleted errors { recordName code message serverRecord { ...R } } } }
        """ + recordFields
    static let zoneChanges = """
        query ZoneChanges($scope: DatabaseScope!, $zone: ZoneID!, $since: String, $limit: Int, $keys: [String!]) {
          zoneChanges(scope: $scope, zone: $zone, since: $since, limit: $limit) {
            changed { ...R } deleted { recordName recordType } token moreComing } }
        """ + recordFields
    static let zoneRanges = """
        query ZoneRanges($scope: DatabaseScope!, $zone: ZoneID!, $count: Int) {
          zoneRanges(scope: $scope, zone: $zone, count: $count) { position ranges } }
        """
    static let databaseChanges = """
        query DatabaseChanges($scope: DatabaseScope!, $since: String, $limit: Int) {
          databaseChanges(scope: $scope, since: $since, limit: $limit) {
            changedZones { zoneName ownerName } deletedZones { zoneName ownerName } token moreComing } }
        """

    static let share = """
        query Share($scope: DatabaseScope!, $zone: ZoneID!, $root: String) { share(scope: $scope, zone: $zone, rootRecordName: $root) { ...S } }
        """ + shareFields
    static let saveShare = """
        mutation SaveShare($zoneName: String!, $root: String, $title: String, $public: Permission, $participants: [ParticipantInput!],
                           $requests: Boolean, $type: String, $thumbnail: String) {
          saveShare(zoneName: $zoneName, rootRecordName: $root, title: $title, publicPermission: $public, participants: $participants,
                    allowsAccessRequests: $requests, type: $type, thumbnailImageData: $thumbnail) { ...S } }
        """ + shareFields
    static let removeParticipant = """
        mutation RemoveParticipant($zoneName: String!, $root: String, $user: String, $email: String, $phone: String, $owner: String) {
          removeParticipant(zoneName: $zoneName, rootRecordName: $root, userRecordName: $user, email: $email, phone: $phone, ownerName: $owner) { ...S } }
        """ + shareFields
    static let setParticipant = """
        mutation SetParticipant($zoneName: String!, $root: String, $participant: ParticipantInput!, $owner: String) {
          setParticipant(zoneName: $zoneName, rootRecordName: $root, participant: $participant, ownerName: $owner) { ...S } }
        """ + shareFields
    static let deleteShare = "mutation DeleteShare($zoneName: String!, $root: String) { deleteShare(zoneName: $zoneName, rootRecordName: $root) }"
    static let shareMetadata = "query ShareMetadata($url: String!) { shareMetadata(url: $url) { ...M } }\n" + metadataFields
    static let acceptShare = "mutation AcceptShare($url: String!) { acceptShare(url: $url) { ...M } }\n" + metadataFields
    static let shareMetadataWithRoot = """
        query ShareMetadataWithRoot($url: String!, $keys: [String!]) { shareMetadata(url: $url) { ...M rootRecord(desiredKeys: $keys) { ...R } } }
        """ + metadataFields + recordFields
    static let requestShareAccess = "mutation RequestShareAccess($url: String!) { requestShareAccess(url: $url) { ...M } }\n" + metadataFields
    static func decideAccessRequest(_ field: String) -> String {
        let permission = field == "approveAccessRequest" ? ", $permission: Permission" : ""
        let argument = field == "approveAccessRequest" ? ", permission: $permission" : ""
        return """
            mutation Decide($zoneName: String!, $root: String, $user: String!, $owner: String\(permission)) {
              \(field)(zoneName: $zoneName, rootRecordName: $root, userRecordName: $user, ownerName: $owner\(argument)) { ...S } }
            """ + shareFields
    }
    static let shareActivity = """
        query ShareActivity($scope: DatabaseScope!, $zone: ZoneID!, $root: String, $after: String, $limit: Int) {
          share(scope: $scope, zone: $zone, rootRecordName: $root) { activity(after: $after, limit: $limit) { entries { event actor subject detail at } cursor } } }
        """
    static let moveRecords = """
        mutation MoveRecords($from: ZoneID!, $to: ZoneID!, $names: [String!]!, $descendants: Boolean, $parent: String) {
          moveRecords(from: $from, to: $to, recordNames: $names, withDescendants: $descendants, parent: $parent) { moved errors { recordName code message } } }
        """
    static let leaveShare = "mutation LeaveShare($zone: ZoneID!, $root: String) { leaveShare(zone: $zone, rootRecordName: $root) }"

    static let zoneChanged = """
        subscription ZoneChanged($scope: DatabaseScope!, $zone: ZoneID!, $since: String, $keys: [String!]) {
          zoneChanged(scope: $scope, zone: $zone, since: $since) { changed { ...R } deleted { recordName recordType } token moreComing } }
        """ + recordFields
    static let databaseChanged = """
        subscription DatabaseChanged($scope: DatabaseScope!, $since: String) {
          databaseChanged(scope: $scope, since: $since) { changedZones { zoneName ownerName } deletedZones { zoneName ownerName } token moreComing } }
        """

    static let subscriptionFields = "fragment P on PushSubscription { subscriptionID kind scope zone { zoneName ownerName } recordType filter args firesOn }"
    static let saveSubscription = """
        mutation SaveSubscription($id: String!, $kind: SubscriptionKind!, $scope: DatabaseScope, $zone: ZoneID, $type: String,
                                  $filter: String, $args: JSON, $firesOn: [SubscriptionEvent!]) {
          saveSubscription(subscriptionID: $id, kind: $kind, scope: $scope, zone: $zone, recordType: $type, filter: $filter,
                           args: $args, firesOn: $firesOn) { ...P } }
        """ + subscriptionFields
    static let deleteSubscription = "mutation DeleteSubscription($id: String!) { deleteSubscription(subscriptionID: $id) }"
    static let subscriptions = "query Subscriptions { subscriptions { ...P } }\n" + subscriptionFields
    static let deviceFields = "fragment D on Device { deviceID kind failing signingSecret }"
    static let registerDevice = """
        mutation RegisterDevice($kind: DeviceKind!, $token: String, $environment: APNsEnvironment, $topic: String,
                                $endpoint: String, $p256dh: String, $auth: String, $url: String) {
          registerDevice(kind: $kind, apnsToken: $token, apnsEnvironment: $environment, apnsTopic: $topic,
                         endpoint: $endpoint, p256dh: $p256dh, auth: $auth, url: $url) { ...D } }
        """ + deviceFields
    static let unregisterDevice = "mutation UnregisterDevice($id: String!) { unregisterDevice(deviceID: $id) }"
    static let devices = "query Devices { devices { ...D } }\n" + deviceFields
    static let pushConfiguration = "query PushConfiguration { pushConfiguration { vapidPublicKey } }"
}

/// The GraphQL schema Canopy serves, compiled in so the binary needs no
/// files at run time. `schema/canopy.graphql` holds the same text for
/// people and tools; a test keeps the two identical.
public enum CanopySchemaSource {
    public static let sdl = #"""
# Canopy GraphQL API (v1), the contract of ../shared/spec/API.md §3.
# The gateway validates every document against this schema and serves it to
# introspection. Keep Sources/CanopyQuery/GraphQL/CanopySchema.swift identical
# (a test checks).

scalar JSON
enum DatabaseScope { PRIVATE SHARED }
enum Permission { NONE READ_ONLY READ_WRITE }
enum ParticipantRole { OWNER ADMINISTRATOR PRIVATE_USER PUBLIC_USER }
enum AcceptanceStatus { PENDING ACCEPTED REMOVED }
enum SavePolicy { IF_SERVER_RECORD_UNCHANGED CHANGED_KEYS ALL_KEYS }
enum SortDirection { ASC DESC }

input ZoneID { zoneName: String!, ownerName: String }  # ownerName: default the caller; required in SHARED
input Sort { field: String!, direction: SortDirection = ASC }
input RecordInput {
  recordName: String!, recordType: String!, fields: JSON!,
  recordChangeTag: String   # the tag last seen; omit to create
  parent: String            # recordName of the parent, same zone
}
input ParticipantInput { email: String, phone: String, userRecordName: String, permission: Permission!, role: ParticipantRole = PRIVATE_USER }  # role: PRIVATE_USER or ADMINISTRATOR

type User { userRecordName: String!, name: String, email: String, phone: String }
type Stamp { timestamp: Float!, userRecordName: String! }   # timestamp: ms since epoch
type Zone { zoneName: String!, ownerName: String!, share: Share }
type Record {
  recordName: String!, recordType: String!, zone: Zone!,
  fields(keys: [String!]): JSON!, parent: String, recordChangeTag: String!,
  created: Stamp!, modified: Stamp!, share: Share   # share: set on a share's root record
}
type RecordPage { records: [Record!]!, cursor: String }   # cursor null: no more
type LookupResult { recordName: String!, record: Record, error: Error }
type Tombstone { recordName: String!, recordType: String! }
type ZoneChanges { changed: [Record!]!, deleted: [Tombstone!]!, token: String!, moreComing: Boolean! }
type DatabaseChanges { changedZones: [Zone!]!, deletedZones: [Zone!]!, token: String!, moreComing: Boolean! }
type Error { code: String!, message: String!, serverRecord: Record }
type RecordError { recordName: String!, code: String!, message: String!, serverRecord: Record }
type ModifyResult { saved: [Record!]!, deleted: [String!]!, errors: [RecordError!]! }
type Participant { user: User, email: String, phone: String, role: ParticipantRole!, permission: Permission!, status: AcceptanceStatus! }
type Share {
  url: String!, title: String, publicPermission: Permission!, zone: Zone!,
  rootRecordName: String,          # null for a zone-wide share
  owner: Participant!, participants: [Participant!]!
}
type ShareMetadata {
  url: String!, title: String, ownerName: String!, zone: Zone!, rootRecordName: String,
  role: ParticipantRole, permission: Permission!, status: AcceptanceStatus   # the caller's, if any
}

type Query {
  me: User!
  zones(scope: DatabaseScope!): [Zone!]!
  records(scope: DatabaseScope!, zone: ZoneID!, recordType: String!, filter: String,
          args: JSON, sort: [Sort!], limit: Int = 100, cursor: String): RecordPage!
  lookup(scope: DatabaseScope!, zone: ZoneID!, recordNames: [String!]!): [LookupResult!]!
  zoneChanges(scope: DatabaseScope!, zone: ZoneID!, since: String, limit: Int = 200): ZoneChanges!
  databaseChanges(scope: DatabaseScope!, since: String, limit: Int = 200): DatabaseChanges!
  share(scope: DatabaseScope!, zone: ZoneID!, rootRecordName: String): Share   # null: not shared
  shareMetadata(url: String!): ShareMetadata!
  discoverUser(email: String, phone: String): User   # null unless that user exists
}

type Mutation {
  saveZone(zoneName: String!): Zone!                  # PRIVATE; idempotent
  deleteZone(scope: DatabaseScope!, zone: ZoneID!): Boolean!   # SHARED scope: leave
  modifyRecords(scope: DatabaseScope!, zone: ZoneID!, save: [RecordInput!] = [],
                delete: [String!] = [], savePolicy: SavePolicy = IF_SERVER_RECORD_UNCHANGED,
                atomic: Boolean = true): ModifyResult!
  saveShare(zoneName: String!, rootRecordName: String, title: String,
            publicPermission: Permission = NONE, participants: [ParticipantInput!] = []): Share!
  setParticipant(zoneName: String!, rootRecordName: String, participant: ParticipantInput!,
                 ownerName: String): Share!  # add or change; ownerName: Canopy's addition, for administrators (default: the caller)
  removeParticipant(zoneName: String!, rootRecordName: String, userRecordName: String, email: String,
                    ownerName: String): Share!  # ownerName: as for setParticipant
  deleteShare(zoneName: String!, rootRecordName: String): Boolean!
  acceptShare(url: String!): ShareMetadata!
  leaveShare(zone: ZoneID!, rootRecordName: String): Boolean!
}

# Canopy's addition (API.md has no Subscription type): live change feeds over
# WebSocket (graphql-transport-ws at /graphql). Each event is one page of the
# feed, as zoneChanges/databaseChanges would return it from the last token
# (the argument `since` first); an event is sent when a page has changes.
type Subscription {
  zoneChanged(scope: DatabaseScope!, zone: ZoneID!, since: String): ZoneChanges!
  databaseChanged(scope: DatabaseScope!, since: String): DatabaseChanges!
}

"""#
}

// Types of database.js: one of the container's three databases
// (`CKDatabase`): zones, records, queries, batches, change feeds, live
// feeds, shares and push subscriptions.

import type {Container} from "./container.js";
import type {CanopyError} from "./errors.js";
import type {LiveIterator} from "./live.js";
import type {CanopyRecord, RecordOf, SavableRecordOf, SavePolicy, ShareLink, ZoneID, ZoneLike} from "./records.js";
import type {RequestOptions} from "./transport.js";
import type {FieldInput} from "./values.js";

/** Which of the container's databases. */
export type DatabaseScope = "PRIVATE" | "SHARED" | "PUBLIC";

/** What a share lets someone do. */
export type Permission = "NONE" | "READ_ONLY" | "READ_WRITE";

/** A participant's place in a share. */
export type ParticipantRole = "OWNER" | "ADMINISTRATOR" | "PRIVATE_USER" | "PUBLIC_USER";

/** Whether a participant has accepted a share. */
export type AcceptanceStatus = "PENDING" | "ACCEPTED" | "REMOVED";

/** A person as the server shows them (`CKUserIdentity`). */
export interface UserIdentity {
  userRecordName: string;
  name: string | null;
  email: string | null;
  phone: string | null;
}

/** A zone as zones() and the database feed answer it: a ZoneID with its share, if any. */
export interface ZoneInfo extends ZoneID {
  share: ShareLink | null;
}

/** One result of lookup: the record, or the error (UNKNOWN_ITEM) for its name. */
export interface LookupResult {
  recordName: string;
  record: CanopyRecord | null;
  error: CanopyError | null;
}

/** What lookup and fetchRecord read. */
export interface LookupOptions extends RequestOptions {
  /** The fields to read (absent: all). */
  desiredKeys?: string[];
}

/** One sort key: a field name, ascending, or {field, direction}. */
export type SortKey = string | {field: string; direction?: "ASC" | "DESC"};

/** What query reads (docs/API.md §5). */
export interface QueryOptions<T extends string = string> extends RequestOptions {
  /** A type declared in RecordTypes (canopy schema typescript) makes the query answer typed records. */
  recordType: T;
  /**
   * The filter expression (docs/API.md §5), with `$name` placeholders bound by
   * `args`: e.g. `kind == $k AND at >= $from`, or for a STRING_LIST field
   * `ANY tags BEGINSWITH $p` (CloudKit's LIST_MEMBER_BEGINS_WITH).
   */
  filter?: string | null;
  /**
   * The placeholders' values, encoded as field values are: a `Date` for a
   * TIMESTAMP, a `BigInt` for an INT64 beyond 2^53, a `Location`, a
   * `Reference`; a list binds `%@` in order.
   */
  args?: {[name: string]: FieldInput} | FieldInput[] | null;
  sort?: SortKey[];
  desiredKeys?: string[];
  /** Records per request (default 100). */
  pageSize?: number;
  /** A page's cursor, to continue a query read earlier. */
  cursor?: string | null;
}

/** One page of a query: its records and the cursor of the next (null: the last). */
export interface QueryPage<R = CanopyRecord> {
  records: R[];
  cursor: string | null;
}

/**
 * The records of a query, read page by page as they are consumed.
 * `pages()` and `all()` each run the query again from its start, apart from
 * this iterator.
 */
export interface QueryIterator<R = CanopyRecord> extends AsyncIterableIterator<R> {
  /** The query as whole pages `{records, cursor}`. */
  pages(options?: {signal?: AbortSignal}): AsyncIterableIterator<QueryPage<R>>;
  /** Every matching record in one array (for small results); `signal` stops it between and during pages. */
  all(options?: {signal?: AbortSignal}): Promise<R[]>;
}

/** A record version for deleteIfUnchanged: a record as read, or its name and change tag. */
export type RecordVersion = CanopyRecord | {recordName: string; recordChangeTag: string};

/**
 * What modify sends (`CKModifyRecordsOperation`). `T` is read from the
 * saves' recordTypes: each save of a type declared in RecordTypes has the
 * schema's fields (SavableRecordOf).
 */
export interface ModifyOptions<T extends string = string> extends RequestOptions {
  save?: ({recordType: T} & SavableRecordOf<T>)[];
  /** Record names to delete. */
  delete?: string[];
  /** Records deleted only at this change tag (else SERVER_RECORD_CHANGED). */
  deleteIfUnchanged?: RecordVersion[];
  /** Default IF_SERVER_RECORD_UNCHANGED. */
  savePolicy?: SavePolicy;
  /** All or nothing (default true). */
  atomic?: boolean;
}

/** What modify answers: each error a CanopyError with its recordName (and serverRecord on a conflict). */
export interface ModifyResult {
  saved: CanopyRecord[];
  deleted: string[];
  errors: CanopyError[];
}

/** What saveRecord sends. */
export interface SaveRecordOptions extends RequestOptions {
  savePolicy?: SavePolicy;
}

/** Where moveRecords puts the records. */
export interface MoveRecordsOptions extends RequestOptions {
  /** Move their descendants too (default true). */
  withDescendants?: boolean;
  /** The moved records' new parent in the target zone (default none). */
  parent?: string | null;
}

/** What moveRecords answers; errors means nothing moved. */
export interface MoveResult {
  moved: string[];
  errors: CanopyError[];
}

/** A deleted record in a zone's feed. */
export interface Tombstone {
  recordName: string;
  recordType: string;
}

/** One page of a zone's feed; keep `token` for next time. */
export interface ZoneChangesPage {
  changed: CanopyRecord[];
  deleted: Tombstone[];
  token: string;
  moreComing: boolean;
}

/** Options of Database.zoneRanges. */
export interface ZoneRangesOptions extends RequestOptions {
  /** How many ranges, 1-64 (default 8); the caller's own small zone gets fewer. */
  count?: number;
}

/** What Database.zoneRanges answers: where the feed stands, and one token a range. */
export interface ZoneRanges {
  /** Follow zoneChanges from here once every range was read. */
  position: string;
  /** Each a `since` for zoneChanges; a range's last page answers `position`. */
  ranges: string[];
}

/** One page of a database's feed of zones; keep `token` for next time. */
export interface DatabaseChangesPage {
  changedZones: ZoneInfo[];
  deletedZones: ZoneID[];
  token: string;
  moreComing: boolean;
}

/** Where a zone's feed starts and how much a page holds. */
export interface ZoneChangesOptions extends RequestOptions {
  /** A page's token (null: everything). */
  since?: string | null;
  /** Changes per page (default 200). */
  limit?: number;
  desiredKeys?: string[];
}

/** Where a database's feed starts and how much a page holds. */
export interface DatabaseChangesOptions extends RequestOptions {
  since?: string | null;
  limit?: number;
}

/** Where a live feed starts; it ends when `signal` aborts. */
export interface WatchOptions extends RequestOptions {
  /** A page's token (null: the whole feed first). */
  since?: string | null;
}

/** A share's participant (`CKShare.Participant`). */
export interface Participant {
  user: UserIdentity | null;
  email: string | null;
  phone: string | null;
  role: ParticipantRole;
  permission: Permission;
  status: AcceptanceStatus;
  /** Added by approving an access request. */
  isApprovedRequester: boolean;
  dateAddedToShare: Date;
}

/** Someone who asked to join a share (docs/API.md §17). */
export interface AccessRequest {
  user: UserIdentity;
  status: "PENDING" | "BLOCKED";
  requestedAt: Date;
}

/** A share (`CKShare`) of a zone (rootRecordName null) or of a record hierarchy. */
export interface Share {
  url: string;
  title: string | null;
  publicPermission: Permission;
  /** The zone as the server sent it. */
  zone: {zoneName: string; ownerName: string};
  zoneID: ZoneID;
  rootRecordName: string | null;
  owner: Participant;
  participants: Participant[];
  allowsAccessRequests: boolean;
  /** For the owner and administrators (empty for others), oldest first. */
  accessRequests: AccessRequest[];
  /** cloudkit.share.type */
  type: string | null;
  /** The thumbnail as base64. */
  thumbnailImageData: string | null;
}

/** A participant to add or change; named by email, phone or userRecordName. */
export interface ParticipantInput {
  email?: string | null;
  phone?: string | null;
  userRecordName?: string | null;
  permission: Permission;
  /** Default PRIVATE_USER. */
  role?: "PRIVATE_USER" | "ADMINISTRATOR";
}

/** Which share: the zone's (rootRecordName null) or a record hierarchy's. */
export interface ShareOptions extends RequestOptions {
  rootRecordName?: string | null;
}

/** What saveShare changes; absent options stay as they are. */
export interface SaveShareOptions extends ShareOptions {
  title?: string | null;
  publicPermission?: Permission;
  participants?: ParticipantInput[];
  allowsAccessRequests?: boolean;
  type?: string | null;
  /** base64 */
  thumbnailImageData?: string | null;
}

/** Who removeParticipant removes. */
export interface ParticipantName {
  userRecordName?: string | null;
  email?: string | null;
  phone?: string | null;
}

/** How an access request is decided. */
export type AccessDecision = "approve" | "deny" | "block" | "unblock";

/** What decideAccessRequest sends. */
export interface DecideAccessRequestOptions extends ShareOptions {
  /** The permission an approval grants (default READ_ONLY). */
  permission?: Permission;
}

/** What a share's activity log records. */
export type ShareEventName =
  | "SHARE_CREATED" | "SHARE_DELETED" | "ZONE_DELETED" | "ROOT_DELETED" | "INVITED" | "ACCEPTED"
  | "PERMISSION_CHANGED" | "REMOVED" | "LEFT" | "REQUEST_MADE" | "REQUEST_APPROVED" | "REQUEST_DENIED"
  | "REQUESTER_BLOCKED" | "REQUESTER_UNBLOCKED" | "PUBLIC_PERMISSION_CHANGED" | "ACCESS_REQUESTS_CHANGED";

/** One entry of a share's activity log: who (null: the server) did what to whom, when. */
export interface ShareActivityEntry {
  event: ShareEventName;
  actor: string | null;
  subject: string | null;
  detail: unknown;
  at: Date;
}

/** How shareActivity reads the log. */
export interface ShareActivityOptions extends ShareOptions {
  /** Entries per request (default 50). */
  pageSize?: number;
}

/** What a push subscription watches. */
export type SubscriptionKind = "DATABASE" | "ZONE" | "QUERY";

/** What fires a push subscription. */
export type SubscriptionEvent = "CREATE" | "UPDATE" | "DELETE";

/** A push subscription to save (`CKSubscription`). */
export interface SubscriptionOptions extends RequestOptions {
  subscriptionID: string;
  kind: SubscriptionKind;
  /** Needed by ZONE; narrows QUERY (absent: every zone of the scope). */
  zone?: ZoneLike | null;
  /** Needed by QUERY. */
  recordType?: string | null;
  filter?: string | null;
  args?: {[name: string]: unknown} | null;
  /** Default every event. */
  firesOn?: SubscriptionEvent[];
}

/** A push subscription as the server keeps it. */
export interface ServerSubscription {
  subscriptionID: string;
  kind: SubscriptionKind;
  scope: DatabaseScope;
  zone: ZoneID | null;
  recordType: string | null;
  filter: string | null;
  args: unknown;
  firesOn: SubscriptionEvent[];
}

/** The most records one modify may carry (the server's limit, CloudKit's). */
export declare const maximumBatchSize: number;

/** One of the container's three databases (`CKDatabase`). */
export declare class Database {
  /** scope: "PRIVATE", "SHARED" or "PUBLIC"; made by the Container. */
  constructor(container: Container, scope: DatabaseScope);
  readonly container: Container;
  readonly scope: DatabaseScope;

  /** Every zone of this database the caller can see (`allRecordZones`); withShares: each with its whole share (title, owner, people). */
  zones(options: RequestOptions & {withShares: true}): Promise<(ZoneID & {share: Share | null})[]>;
  zones(options?: RequestOptions & {withShares?: false}): Promise<ZoneInfo[]>;
  /** Creates a zone (private database only); saving one that exists is a no-op. */
  saveZone(zone: ZoneLike, options?: RequestOptions): Promise<ZoneInfo>;
  /** Deletes a zone and its records; in the shared database, leaves its share. */
  deleteZone(zone: ZoneLike, options?: RequestOptions): Promise<boolean>;

  /** Reads records by name: one result per name, in order. */
  lookup(zone: ZoneLike, recordNames: string[], options?: LookupOptions): Promise<LookupResult[]>;
  /** One record by name; throws UNKNOWN_ITEM when it does not exist (or is not the caller's to see). */
  fetchRecord(zone: ZoneLike, recordName: string, options?: LookupOptions): Promise<CanopyRecord>;
  /**
   * The records of one type matching `filter`, sorted, read by keyset
   * cursor as they are consumed. Throws TypeError at once without recordType.
   */
  query<T extends string>(zone: ZoneLike, options: QueryOptions<T>): QueryIterator<RecordOf<T>>;
  /** Saves and deletes records in one request; throws LIMIT_EXCEEDED above maximumBatchSize. */
  modify<T extends string = string>(zone: ZoneLike, options?: ModifyOptions<T>): Promise<ModifyResult>;
  /** Saves one record; answers it as saved (new change tag), or throws its error. Typed by its recordType when declared. */
  saveRecord<T extends string>(zone: ZoneLike, record: {recordType: T} & SavableRecordOf<T>, options?: SaveRecordOptions): Promise<RecordOf<T>>;
  /** Deletes one record by name; answers its name, or throws its error. */
  deleteRecord(zone: ZoneLike, recordName: string, options?: RequestOptions): Promise<string>;
  /** Moves records with their descendants to another zone of the caller's, keeping their names; all or nothing. */
  moveRecords(from: ZoneLike, to: ZoneLike, recordNames: string[], options?: MoveRecordsOptions): Promise<MoveResult>;

  /** One page of a zone's changes after `since`. */
  zoneChanges(zone: ZoneLike, options?: ZoneChangesOptions): Promise<ZoneChangesPage>;
  /** Every page of a zone's changes after `since`, until `moreComing` is false. */
  fetchZoneChanges(zone: ZoneLike, options?: ZoneChangesOptions): AsyncGenerator<ZoneChangesPage, void, unknown>;
  /**
   * A first sync in parallel: the zone's feed position and its records cut
   * into ranges. Read every range with zoneChanges (at once, in any order),
   * then follow zoneChanges from `position`.
   */
  zoneRanges(zone: ZoneLike, options?: ZoneRangesOptions): Promise<ZoneRanges>;
  /** The zone's feed as it ends now, without reading its records: the `since` of a watchZone from now on. */
  zoneChangeToken(zone: ZoneLike, options?: RequestOptions): Promise<string>;
  /** The database feed as it ends now: the `since` of a watchDatabase from now on. */
  databaseChangeToken(options?: RequestOptions): Promise<string>;
  /** One page of the database's changed and deleted zones after `since`. */
  databaseChanges(options?: DatabaseChangesOptions): Promise<DatabaseChangesPage>;
  /** Every page of the database feed after `since`, until `moreComing` is false. */
  fetchDatabaseChanges(options?: DatabaseChangesOptions): AsyncGenerator<DatabaseChangesPage, void, unknown>;
  /**
   * A zone's changes as they are committed, over the WebSocket; reconnects
   * by itself and resumes from the last page's token.
   */
  watchZone(zone: ZoneLike, options?: WatchOptions): LiveIterator<ZoneChangesPage>;
  /** The database feed as it changes, over the WebSocket (as watchZone). */
  watchDatabase(options?: WatchOptions): LiveIterator<DatabaseChangesPage>;

  /** The share of a zone or of a record hierarchy, or null when not shared. */
  share(zone: ZoneLike, options?: ShareOptions): Promise<Share | null>;
  /** Shares a zone of the caller's or a record with its descendants, or changes that share (private database). */
  saveShare(zone: ZoneLike, options?: SaveShareOptions): Promise<Share>;
  /** Adds a participant or changes their permission; the zone's ownerName lets an administrator manage another's share. */
  setParticipant(zone: ZoneLike, participant: ParticipantInput, options?: ShareOptions): Promise<Share>;
  /** Removes a participant, named by `userRecordName`, `email` or `phone`. */
  removeParticipant(zone: ZoneLike, participant: ParticipantName, options?: ShareOptions): Promise<Share>;
  /** Stops sharing: participants lose the zone or hierarchy. */
  deleteShare(zone: ZoneLike, options?: ShareOptions): Promise<boolean>;
  /** Leaves a share the caller accepted (shared database). */
  leaveShare(zone: ZoneLike, options?: ShareOptions): Promise<boolean>;
  /** Decides an access request: "approve" (with `permission`), "deny", "block" or "unblock". */
  decideAccessRequest(zone: ZoneLike, userRecordName: string, decision: AccessDecision, options?: DecideAccessRequestOptions): Promise<Share>;
  /** A share's activity log, oldest first (nothing when not shared). */
  shareActivity(zone: ZoneLike, options?: ShareActivityOptions): AsyncGenerator<ShareActivityEntry, void, unknown>;

  /** Saves a subscription kept on the server; replaces one of the same subscriptionID. */
  saveSubscription(subscription: SubscriptionOptions): Promise<ServerSubscription>;
  /** The caller's subscriptions in this database. */
  subscriptions(options?: RequestOptions): Promise<ServerSubscription[]>;
  /** Deletes a subscription; UNKNOWN_ITEM when the caller has none of that ID. */
  deleteSubscription(subscriptionID: string, options?: RequestOptions): Promise<boolean>;
}

/** A share as the server sent it, decoded: dates as Date, and its ZoneID (null for null). */
export declare function shareFromServer(json: any): Share | null;

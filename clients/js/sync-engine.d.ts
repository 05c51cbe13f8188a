// Types of sync-engine.js: the web's counterpart of CanopyKit's SyncEngine
// (CKSyncEngine). The app keeps its own copy of a database and says what
// it changed; the engine sends and fetches, and hands the app a state to
// store as JSON.

import type {CanopyError} from "./errors.js";
import type {Database, Tombstone, ZoneInfo} from "./database.js";
import type {CanopyRecord, SavableRecord, ZoneID, ZoneLike} from "./records.js";
import type {RequestOptions} from "./transport.js";

/** Whether a pending change saves or deletes. */
export type PendingChangeKind = "save" | "delete";

/** A record change waiting to be sent. */
export interface PendingRecordChange {
  kind: PendingChangeKind;
  zoneID: ZoneID;
  recordName: string;
}

/** A record change to queue; a later change of a record replaces an earlier one. */
export interface PendingRecordChangeInput {
  kind: PendingChangeKind;
  zoneID: ZoneLike;
  recordName: string;
}

/** A zone change to queue. */
export interface PendingZoneChangeInput {
  kind: PendingChangeKind;
  zoneID: ZoneLike;
}

/** A zone as the state stores it. */
export interface ZoneIDJSON {
  zoneName: string;
  ownerName?: string;
}

/**
 * What the app stores (JSON-safe) and gives a new engine to carry on:
 * tokens, the queue and the batch in flight. An engine reads version 1
 * (without `inFlight`) too.
 */
export interface SyncEngineState {
  version: 1 | 2 | 3;
  databaseToken: string | null;
  /** Each zone's token, by its canonical key (SyncEngine.canonicalZoneID). */
  zoneTokens: {[zoneKey: string]: string};
  /** First syncs in ranges under way (version 3): each range's next token, null once read. */
  zoneRanges?: {[zoneKey: string]: {zoneID: ZoneIDJSON; position: string; ranges: (string | null)[]}};
  pendingZoneChanges: {kind: PendingChangeKind; zoneID: ZoneIDJSON}[];
  pendingRecordChanges: {kind: PendingChangeKind; zoneID: ZoneIDJSON; recordName: string}[];
  /** Record changes sent without an answer yet: after a restart, a save the server already has is taken as saved. */
  inFlight?: {zoneID: ZoneIDJSON; recordName: string}[];
  /**
   * Records saved into a zone not yet followed (no token, no first sync
   * under way), by zone key: recordName → recordType. The zone's first
   * full fetch reports those it lacks as deleted.
   */
  savedUnfollowed?: {[zoneKey: string]: {[recordName: string]: string}};
}

/** The state was changed: store it (`event.state`). */
export interface StateUpdateEvent {
  type: "stateUpdate";
  state: SyncEngineState;
}

/** Zones changed or deleted in the database feed (a zone that vanished while fetched comes as deleted). */
export interface FetchedDatabaseChangesEvent {
  type: "fetchedDatabaseChanges";
  changedZones: ZoneInfo[];
  deletedZones: ZoneID[];
}

/** One page of a zone's changes: apply them to the local copy. */
export interface FetchedRecordZoneChangesEvent {
  type: "fetchedRecordZoneChanges";
  zoneID: ZoneID;
  changed: CanopyRecord[];
  deleted: Tombstone[];
  /**
   * The names among them with a change of the app's own still waiting to
   * be sent. For "save", merge the fetched record under the local edit
   * (keep its recordChangeTag) rather than replace the local copy, which
   * would send the fetched fields instead of the edit; for "delete", keep
   * the record deleted.
   */
  pending: {[recordName: string]: PendingChangeKind};
}

/** A zone change the server refused (it leaves the queue). */
export interface FailedZoneChange {
  zoneID: ZoneID;
  kind: PendingChangeKind;
  error: CanopyError;
}

/** The pending zone changes were sent. */
export interface SentDatabaseChangesEvent {
  type: "sentDatabaseChanges";
  savedZones: ZoneID[];
  deletedZones: ZoneID[];
  failedZones: FailedZoneChange[];
}

/** A save the server refused; on SERVER_RECORD_CHANGED merge with error.serverRecord and queue it again. */
export interface FailedRecordSave {
  recordName: string;
  /** What recordToSave gave. */
  record: SavableRecord;
  error: CanopyError;
}

/** A delete the server refused. */
export interface FailedRecordDelete {
  recordName: string;
  error: CanopyError;
}

/** One batch of a zone's pending record changes was sent. */
export interface SentRecordZoneChangesEvent {
  type: "sentRecordZoneChanges";
  zoneID: ZoneID;
  /** As saved (new change tags): store them. */
  savedRecords: CanopyRecord[];
  deletedRecordNames: string[];
  failedRecordSaves: FailedRecordSave[];
  failedRecordDeletes: FailedRecordDelete[];
  /**
   * The names the app changed again while this batch was out: their newer
   * change still waits. For these take only the saved record's
   * recordChangeTag and keep the local edit; replacing the local copy
   * with the saved record would send the older fields again.
   */
  pending: {[recordName: string]: PendingChangeKind};
}

/**
 * A stored token expired: the feed starts again from nothing (zoneID null:
 * the database's). Drop the local copy, but keep the records named in
 * pendingRecordChanges: their edits are not on the server yet.
 */
export interface ChangeTokenExpiredEvent {
  type: "changeTokenExpired";
  zoneID: ZoneID | null;
}

/** A fetch or send is about to start, or has ended. */
export interface SyncPhaseEvent {
  type: "willFetchChanges" | "didFetchChanges" | "willSendChanges" | "didSendChanges";
}

/**
 * Whether the server can be reached changed: false after a request failed
 * because it could not (NETWORK_FAILURE, SERVICE_UNAVAILABLE) or the live
 * connection stayed down; true after the server answered. While false,
 * what waits is sent as soon as the server is back.
 */
export interface ServerReachabilityChangedEvent {
  type: "serverReachabilityChanged";
  reachable: boolean;
}

/** Automatic sync failed in the background (no caller to throw to); it tries again by itself. */
export interface SyncErrorEvent {
  type: "error";
  error: unknown;
}

/** Everything the engine tells its delegate, told apart by `type`. */
export type SyncEngineEvent =
  | StateUpdateEvent
  | FetchedDatabaseChangesEvent
  | FetchedRecordZoneChangesEvent
  | SentDatabaseChangesEvent
  | SentRecordZoneChangesEvent
  | ChangeTokenExpiredEvent
  | SyncPhaseEvent
  | ServerReachabilityChangedEvent
  | SyncErrorEvent;

/** The app's side of the engine. */
export interface SyncEngineDelegate {
  /** The record to send for a pending save, or null to drop it. */
  recordToSave(zoneID: ZoneID, recordName: string): SavableRecord | null | undefined | Promise<SavableRecord | null | undefined>;
  /** Applies what was fetched and learns what was sent; awaited, in order. */
  handleEvent(event: SyncEngineEvent, engine: SyncEngine): void | Promise<void>;
}

/** What a SyncEngine is made from. */
export interface SyncEngineOptions {
  /** A Database of a Container (container.privateDatabase, …). */
  database: Database;
  /** What an earlier engine's stateUpdate gave (or JSON.parse of it); absent: start from nothing. */
  state?: SyncEngineState | null;
  delegate: SyncEngineDelegate;
  /**
   * Listen on the WebSocket and fetch on each change, and send about
   * 100 ms after changes are added (call stop() when done). Default false.
   */
  automaticallySync?: boolean;
  /** How often a request is sent again after retryable errors (default 12). */
  maximumRetries?: number;
  /** Changes per page of a zone's feed (default 400). */
  pageSize?: number;
  /**
   * A zone with no token (a first sync) is read in this many ranges at
   * once (Database.zoneRanges; default 8, at most 64); 0 or 1 reads it as
   * one chain of pages. Its pages come in no particular record order.
   */
  firstSyncRanges?: number;
}

/**
 * The pause automatic sync takes before trying again after its `failures`-th
 * failure in a row: doubling from 1 s to 60 s, plus a random half (`random`
 * gives a number in [0, 1); Math.random by default).
 */
export declare function resumeDelay(failures: number, random?: () => number): number;

/** Keeps an app's copy of a database in step with the server (`CKSyncEngine`). */
export declare class SyncEngine {
  /** Throws TypeError without a database or a delegate with recordToSave and handleEvent. */
  constructor(options: SyncEngineOptions);
  readonly database: Database;
  readonly delegate: SyncEngineDelegate;
  maximumRetries: number;
  pageSize: number;
  firstSyncRanges: number;
  /** Requests sent again after a retryable error (service unavailable, rate limit, network). */
  retries: number;
  /** The batch size the next send starts from; halved after LIMIT_EXCEEDED. */
  batchSize: number;
  readonly automaticallySync: boolean;
  /** null until the first answer or failure; then whether the server could be reached. */
  serverReachable: boolean | null;
  /** Automatic sync's failures in a row (the pause before the next try grows with it). */
  failures: number;
  /** The state to store (JSON-safe): tokens, the queue and the batch in flight. */
  get state(): SyncEngineState;
  /** The pending record changes, oldest first. */
  get pendingRecordChanges(): PendingRecordChange[];
  /** Whether any zone or record change waits to be sent. */
  get hasPendingChanges(): boolean;
  /**
   * A zone in the one form the engine names it in events, in its state
   * and to recordToSave: in the private database without its owner, in
   * the shared database with it. Key a local store by
   * `canonicalZoneID(zone).key`.
   */
  canonicalZoneID(zone: ZoneLike): ZoneID;
  /**
   * Queues record changes; a later change of a record replaces an earlier
   * one. Settles once the stateUpdate holding them was handled (never
   * rejects; do not await it while handling a stateUpdate).
   */
  addPendingRecordChanges(changes: PendingRecordChangeInput[]): Promise<void>;
  /** Queues zone changes; settles as addPendingRecordChanges. */
  addPendingZoneChanges(changes: PendingZoneChangeInput[]): Promise<void>;
  /**
   * Fetches what changed since the stored tokens: the database feed, then
   * each changed zone's feed (or, in the public database, its one zone).
   */
  fetchChanges(options?: CallerSyncOptions): Promise<void>;
  /**
   * Sends the pending changes: zones first, then records in batches of at
   * most 400 (halved after LIMIT_EXCEEDED), not atomic, each save checked
   * against its change tag.
   */
  sendChanges(options?: CallerSyncOptions): Promise<void>;
  /**
   * Settles once every change queued now is answered by the server (saved,
   * or refused: the refusal reaches the delegate); a record edited again
   * meanwhile is waited for until its latest edit is answered. Waits
   * through outages; rejects with an AbortError when `signal` aborts or
   * the engine stops first.
   */
  whenSent(options?: RequestOptions): Promise<void>;
  /** Stops listening and the delayed send; waits for the work in progress. */
  stop(): Promise<void>;
}

/**
 * A fetch or send asked for by a caller. With `retries`, that many retries
 * at most (0: one attempt), and automatic sync's pause between its own
 * retries ends so the call is not held behind it. Without, up to
 * `maximumRetries`.
 */
export interface CallerSyncOptions extends RequestOptions {
  retries?: number;
}

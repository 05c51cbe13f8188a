// Types of synced-database.js: a database's records on this device, kept
// in step with the server and stored by an adapter.

import type {Database} from "./database.js";
import type {CanopyRecord, FieldsInputOf, RecordOf, RecordTypes, ZoneID, ZoneLike} from "./records.js";
import type {SyncStorage} from "./storage.js";
import type {SyncEngine, SyncEngineEvent, SyncEngineOptions} from "./sync-engine.js";
import type {FieldsInput} from "./values.js";

/** What SyncedDatabase.open takes: the engine's options, and these. */
export interface SyncedDatabaseOptions extends Omit<SyncEngineOptions, "delegate" | "state" | "database"> {
  /** A Database of a Container (container.privateDatabase, …). */
  database: Database;
  /** Where the copy is kept (default: memory only). */
  storage?: SyncStorage;
  /** Default true here: listen on the WebSocket, send ~100 ms after an edit, resume after an outage. */
  automaticallySync?: boolean;
  /** Called after every change to the copy, the queue or reachability. */
  onChange?: (synced: SyncedDatabase) => void;
  /** A refusal the copy could not merge, a failed write, or a background sync failure (it tries again by itself). */
  onError?: (error: unknown) => void;
  /** Every engine event, after the copy has applied and stored it (awaited). */
  onEvent?: (event: SyncEngineEvent, engine: SyncEngine) => void | Promise<void>;
}

/** A zone of the copy. */
export interface SyncedZone {
  zoneID: ZoneID;
  /** The share's URL, for a zone shared with the caller. */
  shareURL: string | null;
}

/** What save takes: fields are merged into the record's; null removes one. */
export interface SyncedSave<T extends string = string> {
  recordName: string;
  /** Needed for a new record. */
  recordType?: T;
  fields?: FieldsInput;
  /** The parent's recordName, same zone. */
  parent?: string | null;
}

/** A save of the declared type `T`: its fields the schema's (null removes one), so a misspelt or mistyped field does not compile. */
export interface TypedSyncedSave<T extends keyof RecordTypes & string> {
  recordName: string;
  recordType: T;
  fields?: FieldsInputOf<RecordTypes[T]>;
  /** The parent's recordName, same zone. */
  parent?: string | null;
}

/** What save takes for `recordType` T: a TypedSyncedSave when T is declared in RecordTypes, a SyncedSave otherwise. */
export type SyncedSaveOf<T extends string> = T extends keyof RecordTypes ? TypedSyncedSave<T> : SyncedSave<T>;

/**
 * A database's records on this device, kept in step with the server by a
 * SyncEngine and stored by an adapter, so an app writes none of the
 * plumbing: edits apply at once and are queued; the copy, the edits
 * waiting and the engine's state are written together before the engine
 * goes on. Conflicts merge field by field, last writer wins.
 */
export declare class SyncedDatabase {
  /** Loads what `storage` kept and starts syncing; TypeError without a database or with a storage that is not one. */
  static open(options: SyncedDatabaseOptions): Promise<SyncedDatabase>;
  private constructor();
  readonly database: Database;
  readonly storage: SyncStorage;
  /** The engine underneath (its state, retries, fetchChanges, sendChanges). */
  readonly engine: SyncEngine;

  /** The zones the copy holds. */
  zones(): SyncedZone[];
  /** A zone's records in the copy, edits included. */
  records(zone: ZoneLike): CanopyRecord[];
  /** A zone's records of one type in the copy, edits included: typed when the type is declared in RecordTypes. */
  records<T extends string>(zone: ZoneLike, options: {recordType: T}): RecordOf<T>[];
  /** One record of the copy, or null. */
  record(zone: ZoneLike, recordName: string): CanopyRecord | null;
  /** How many record changes wait to be sent. */
  get pendingCount(): number;
  /** Whether anything waits to be sent. */
  get hasPendingChanges(): boolean;
  /** null before the first request; then whether the server could be reached. */
  get serverReachable(): boolean | null;
  /**
   * True while the container's session is signed out (a container signed
   * in with `signIn` only): nothing is sent or fetched; edits are kept and
   * go when the same user signs in again.
   */
  get signedOut(): boolean;
  /** Calls `listener` after every change; answers a function that stops it. */
  onChange(listener: (synced: SyncedDatabase) => void): () => void;

  /** Saves here at once and queues it; settles once the record and the queue are stored. */
  save<T extends string = string>(zone: ZoneLike, record: {recordType?: T} & SyncedSaveOf<T>): Promise<RecordOf<T>>;
  /** Deletes here at once and queues the delete; settles once stored. */
  delete(zone: ZoneLike, recordName: string): Promise<void>;
  /**
   * Sends what waits, then fetches what changed ("Sync now", or after a
   * push): one attempt by default, so it rejects at the first refused
   * connection (NETWORK_FAILURE); automatic sync's retries give way to it.
   */
  sync(options?: {signal?: AbortSignal; retries?: number}): Promise<void>;
  /**
   * Settles once everything queued now is answered by the server (saved,
   * or refused and reported to onError), waiting through outages; rejects
   * with an AbortError when `signal` aborts, on close() or on sign-out, and
   * with NOT_AUTHENTICATED while signed out.
   */
  whenSent(options?: {signal?: AbortSignal}): Promise<void>;
  /** Stops syncing and waits for the last write; what is stored stays. */
  close(): Promise<void>;
  /** Closes and deletes what the storage kept (signing out on a shared device). */
  forget(): Promise<void>;
}

// Types of storage.js: where a SyncedDatabase keeps its copy on the device.

import type {CanopyRecordJSON} from "./records.js";
import type {SyncEngineState, ZoneIDJSON} from "./sync-engine.js";

/** A zone of the copy as stored. */
export interface StoredZone {
  zoneID: ZoneIDJSON;
  /** The share's URL, for a zone shared with the caller. */
  shareURL: string | null;
}

/** A record waiting to be read again from the server (after a refusal). */
export interface StoredRefetch {
  zoneID: ZoneIDJSON;
  recordName: string;
}

/** Everything an adapter keeps, as load() answers it. */
export interface SyncedDatabaseSnapshot {
  version: 1;
  state: SyncEngineState | null;
  /** By the engine's zone key (SyncEngine.canonicalZoneID(zone).key). */
  zones: {[zoneKey: string]: StoredZone};
  records: {[zoneKey: string]: {[recordName: string]: CanopyRecordJSON}};
  /** The field names edited here and not yet on the server, by zone key and record name. */
  edits: {[zoneKey: string]: {[recordName: string]: string[]}};
  refetch: StoredRefetch[];
}

/**
 * One write, to be made atomically (all of it or none): zones removed
 * first, then records removed, then records put; `state`, `zones`,
 * `edits` and `refetch` replace what was kept.
 */
export interface StorageWrite {
  state: SyncEngineState;
  zones: {[zoneKey: string]: StoredZone};
  edits: {[zoneKey: string]: {[recordName: string]: string[]}};
  refetch: StoredRefetch[];
  put: {zoneKey: string; recordName: string; record: CanopyRecordJSON}[];
  remove: {zoneKey: string; recordName: string}[];
  removeZones: string[];
}

/** What a SyncedDatabase stores through: IndexedDBStorage, FileStorage, MemoryStorage, or an app's own. */
export interface SyncStorage {
  /** What was kept, or null for nothing. */
  load(): Promise<SyncedDatabaseSnapshot | null>;
  /** Makes one write atomically; settles once it is durable. */
  write(write: StorageWrite): Promise<void>;
  /** Deletes everything kept. */
  clear(): Promise<void>;
  close?(): Promise<void>;
}

/** A snapshot with a write applied (how MemoryStorage and FileStorage keep theirs). */
export declare function applyWrite(snapshot: SyncedDatabaseSnapshot | null, write: StorageWrite): SyncedDatabaseSnapshot;

/** Keeps the copy in memory only: for tests, and for a page that may start from nothing each time. */
export declare class MemoryStorage implements SyncStorage {
  constructor();
  load(): Promise<SyncedDatabaseSnapshot | null>;
  write(write: StorageWrite): Promise<void>;
  clear(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Keeps the copy in the browser's IndexedDB, in a database of its own
 * (one per user and database: `todo:${userRecordName}:private`); every
 * write is one transaction.
 */
export declare class IndexedDBStorage implements SyncStorage {
  /** Throws TypeError without a name, or where there is no IndexedDB. */
  constructor(name: string, options?: {indexedDB?: IDBFactory});
  readonly name: string;
  load(): Promise<SyncedDatabaseSnapshot | null>;
  write(write: StorageWrite): Promise<void>;
  /** Deletes the IndexedDB database. */
  clear(): Promise<void>;
  close(): Promise<void>;
}

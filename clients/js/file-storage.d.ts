// Types of file-storage.js (`@canopy/client/file-storage`, Node only).

import type {StorageWrite, SyncStorage, SyncedDatabaseSnapshot} from "./storage.js";

/**
 * Keeps a SyncedDatabase's copy in one JSON file, written whole to
 * `${path}.tmp`, flushed and renamed over the old one: a process killed at
 * any moment leaves the write before or the write after.
 */
export declare class FileStorage implements SyncStorage {
  /** Throws TypeError without a path; the folder is made at the first write. */
  constructor(path: string);
  readonly path: string;
  /** What the file holds, or null when there is none; throws for a file that is not one of these. */
  load(): Promise<SyncedDatabaseSnapshot | null>;
  write(write: StorageWrite): Promise<void>;
  /** Removes the file. */
  clear(): Promise<void>;
  close(): Promise<void>;
}

// Where a SyncedDatabase keeps its copy on the device: an adapter with
// load(), write(w) (one atomic write: the engine's state, the zones, the
// edits waiting, and the records changed), clear() and close(). Here the
// browsers' (IndexedDB) and one in memory; the Node one, a file, is
// file-storage.js (imported apart, so pages never load node:fs).

/**
 * Applies a write to a snapshot held as plain objects (MemoryStorage and
 * FileStorage keep one): zones removed first, then records removed, then
 * records put; the state, zones, edits and refetches replaced whole.
 */
export function applyWrite(snapshot, write) {
  const records = snapshot?.records ?? {};
  for (const zoneKey of write.removeZones) delete records[zoneKey];
  for (const {zoneKey, recordName} of write.remove) delete records[zoneKey]?.[recordName];
  for (const {zoneKey, recordName, record} of write.put) (records[zoneKey] ??= {})[recordName] = record;
  for (const zoneKey of Object.keys(records)) if (!Object.keys(records[zoneKey]).length) delete records[zoneKey];
  return {version: 1, state: write.state, zones: write.zones, edits: write.edits, refetch: write.refetch, records};
}

/** Keeps the copy in memory only: for tests, and for a page that may start from nothing each time. */
export class MemoryStorage {
  constructor() { this.snapshot = null; }

  async load() { return this.snapshot && structuredClone(this.snapshot); }

  async write(write) { this.snapshot = applyWrite(this.snapshot, structuredClone(write)); }

  async clear() { this.snapshot = null; }

  async close() {}
}

const recordsStore = "records";
const metaStore = "meta";

function requestDone(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

function transactionDone(transaction) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
    transaction.onabort = () => reject(transaction.error ?? new Error("the IndexedDB transaction was aborted"));
  });
}

/**
 * Keeps the copy in the browser's IndexedDB, in a database of its own
 * (`name`: one per user and database, e.g. `todo:${userRecordName}:private`):
 * each record in a `records` store keyed by [zone, recordName], and the
 * engine's state with the zones, edits and refetches in `meta`. Every write
 * is one readwrite transaction over both, so a page closed mid-write keeps
 * the one before or the one after, never half.
 */
export class IndexedDBStorage {
  constructor(name, {indexedDB: factory = globalThis.indexedDB} = {}) {
    if (typeof name !== "string" || !name) throw new TypeError("IndexedDBStorage needs a database name");
    if (!factory) throw new TypeError("IndexedDB is not available here (in Node, use FileStorage from @canopy/client/file-storage)");
    this.name = name;
    this.factory = factory;
    this.database = null;
  }

  async open() {
    if (this.database) return this.database;
    const request = this.factory.open(this.name, 1);
    request.onupgradeneeded = () => {
      request.result.createObjectStore(recordsStore);
      request.result.createObjectStore(metaStore);
    };
    this.database = await requestDone(request);
    // Another tab deleting or upgrading it: let go, and open again on the next call.
    this.database.onversionchange = () => { this.database?.close(); this.database = null; };
    return this.database;
  }

  async load() {
    const database = await this.open();
    const transaction = database.transaction([recordsStore, metaStore], "readonly");
    const [meta, keys, values] = await Promise.all([
      requestDone(transaction.objectStore(metaStore).get("meta")),
      requestDone(transaction.objectStore(recordsStore).getAllKeys()),
      requestDone(transaction.objectStore(recordsStore).getAll()),
    ]);
    if (!meta) return null;
    const records = {};
    keys.forEach(([zoneKey, recordName], index) => { (records[zoneKey] ??= {})[recordName] = values[index]; });
    return {...meta, records};
  }

  async write(write) {
    const database = await this.open();
    const transaction = database.transaction([recordsStore, metaStore], "readwrite");
    const done = transactionDone(transaction);
    const records = transaction.objectStore(recordsStore);
    // Arrays sort after strings: [zone] … [zone, []] holds every [zone, name].
    for (const zoneKey of write.removeZones) records.delete(IDBKeyRange.bound([zoneKey], [zoneKey, []]));
    for (const {zoneKey, recordName} of write.remove) records.delete([zoneKey, recordName]);
    for (const {zoneKey, recordName, record} of write.put) records.put(record, [zoneKey, recordName]);
    transaction.objectStore(metaStore).put({version: 1, state: write.state, zones: write.zones, edits: write.edits, refetch: write.refetch}, "meta");
    await done;
  }

  /** Deletes the IndexedDB database. */
  async clear() {
    await this.close();
    await requestDone(this.factory.deleteDatabase(this.name));
  }

  async close() {
    this.database?.close();
    this.database = null;
  }
}

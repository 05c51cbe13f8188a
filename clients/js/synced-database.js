// A local copy of one database, kept in step with the server by a
// SyncEngine and kept on the device by a storage adapter (storage.js,
// file-storage.js): the plumbing every offline app otherwise writes itself.
// An edit is applied to the copy at once and queued; the copy, the fields
// edited here and not yet on the server, and the engine's state are
// written together, in one transaction of the adapter, before the engine
// goes on, so a page closed or a process killed at any moment loses no
// edit it was told was queued.

import {CanopyError, ErrorCode} from "./errors.js";
import {CanopyRecord, ZoneID} from "./records.js";
import {MemoryStorage} from "./storage.js";
import {SyncEngine} from "./sync-engine.js";

const separator = "\u0000";

/**
 * A database's records on this device, synced (`SyncedDatabase.open`).
 * Conflicts merge field by field, last writer wins: on
 * SERVER_RECORD_CHANGED the server's record is taken with the fields
 * edited here on top and saved again; a record fetched while an edit of
 * it waits keeps the edit; an edit of a record someone deleted saves it
 * again as new; a record deleted here stays deleted until the server has
 * the delete. Other refusals show the server's copy again.
 */
export class SyncedDatabase {
  /**
   * Loads what `storage` kept (nothing: starts empty) and starts a
   * SyncEngine over `database` with it. Options other than these are the
   * engine's (automaticallySync defaults to true here).
   */
  static async open({database, storage = new MemoryStorage(), automaticallySync = true, onChange, onError, onEvent, ...engineOptions} = {}) {
    if (!database) throw new TypeError("SyncedDatabase.open needs a database (container.privateDatabase, …)");
    if (typeof storage?.load !== "function" || typeof storage?.write !== "function") {
      throw new TypeError("SyncedDatabase.open needs a storage adapter with load() and write() (IndexedDBStorage, FileStorage, MemoryStorage)");
    }
    const snapshot = await storage.load();
    return new SyncedDatabase({database, storage, snapshot, automaticallySync, onChange, onError, onEvent, engineOptions});
  }

  /** Use SyncedDatabase.open. */
  constructor({database, storage, snapshot, automaticallySync, onChange, onError, onEvent, engineOptions}) {
    this.database = database;
    this.storage = storage;
    this.onError = onError ?? null;
    this.onEvent = onEvent ?? null;
    this.listeners = new Set(onChange ? [onChange] : []);
    /** zone key → {zoneID, shareURL, records: Map(recordName → CanopyRecord)} */
    this.copy = new Map();
    /** zone key NUL recordName → the field names edited here that the server may not have */
    this.edits = new Map();
    /** zone key NUL recordName → {zoneID, recordName}: refused, to be read again from the server */
    this.toRefetch = new Map();
    /** zone key NUL recordName: records changed since the last write */
    this.dirty = new Set();
    /** zone keys whose records all go at the next write */
    this.removedZones = new Set();
    this.writing = Promise.resolve();
    this.closed = false;
    this.automaticallySync = automaticallySync;
    this.engineOptions = engineOptions;
    // A container signed in with `signIn` (its session's token): the copy
    // follows the session. Signed out, it pauses (sends and fetches
    // nothing, `signedOut` true) until the same user signs in again.
    const container = database.container;
    const followsSession = database.scope !== "PUBLIC" && container?.signedInBySession === true;
    /** The user whose copy this is (when it follows a session). */
    this.user = followsSession ? container.session?.user?.userRecordName ?? null : null;
    this.paused = followsSession && !this.user;
    this.pausing = Promise.resolve();
    this.engine = new SyncEngine({database, state: snapshot?.state ?? null, delegate: this, automaticallySync: automaticallySync && !this.paused, ...engineOptions});
    this.stopFollowing = followsSession ? container.onAuthChange((event, session) => this.authChanged(event, session)) : null;
    for (const [key, zone] of Object.entries(snapshot?.zones ?? {})) {
      const entry = this.zoneEntry(ZoneID.from(zone.zoneID));
      entry.shareURL = zone.shareURL ?? null;
      for (const [name, json] of Object.entries(snapshot.records?.[key] ?? {})) entry.records.set(name, CanopyRecord.fromJSON(json));
    }
    for (const [key, names] of Object.entries(snapshot?.edits ?? {})) {
      for (const [name, fields] of Object.entries(names)) this.edits.set(key + separator + name, new Set(fields));
    }
    for (const {zoneID, recordName} of snapshot?.refetch ?? []) this.refetch(ZoneID.from(zoneID), recordName);
  }

  // MARK: Reading the copy

  /** The zones the copy holds: their ZoneID (the engine's canonical one) and, when shared, the share's URL. */
  zones() {
    return [...this.copy.values()].map(({zoneID, shareURL}) => ({zoneID, shareURL}));
  }

  /** The records of a zone in the copy, edits included; with `{recordType}`, only that type's. */
  records(zone, {recordType} = {}) {
    const records = [...(this.copy.get(this.engine.canonicalZoneID(zone).key)?.records.values() ?? [])];
    return recordType === undefined ? records : records.filter((record) => record.recordType === recordType);
  }

  /** One record of the copy, or null. */
  record(zone, recordName) {
    return this.copy.get(this.engine.canonicalZoneID(zone).key)?.records.get(recordName) ?? null;
  }

  /** How many record changes wait to be sent. */
  get pendingCount() { return this.engine.pendingRecordChanges.length; }

  /** Whether anything waits to be sent. */
  get hasPendingChanges() { return this.engine.hasPendingChanges; }

  /** null before the first request; then whether the server could be reached (the engine's). */
  get serverReachable() { return this.engine.serverReachable; }

  /**
   * True while the container's session is signed out (a container signed
   * in with `signIn` only): nothing is sent or fetched; edits are kept and
   * go when the same user signs in again.
   */
  get signedOut() { return this.paused; }

  /** Calls `listener(this)` after every change to the copy, the queue or reachability; answers a function that stops it. */
  onChange(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // MARK: Editing

  /**
   * Saves a record here at once and queues it: `fields` are merged into the
   * record's (null removes one), and remembered as edited here until the
   * server has them. Settles once the record and the queue are stored.
   */
  async save(zone, {recordName, recordType, fields = {}, parent}) {
    if (typeof recordName !== "string" || !recordName) throw new TypeError("save needs a recordName");
    const zoneID = this.engine.canonicalZoneID(zone);
    const entry = this.zoneEntry(zoneID);
    const existing = entry.records.get(recordName);
    if (!existing && (typeof recordType !== "string" || !recordType)) throw new TypeError(`save of the new record ${recordName} needs a recordType`);
    const merged = {...(existing?.fields ?? {}), ...fields};
    for (const [name, value] of Object.entries(fields)) if (value === null) delete merged[name];
    const record = existing
      ? new CanopyRecord({...existing, fields: merged, ...(parent === undefined ? {} : {parent})})
      : new CanopyRecord({recordName, recordType, fields: merged, zoneID, parent: parent ?? null});
    entry.records.set(recordName, record);
    const key = this.key(zoneID, recordName);
    this.edits.set(key, new Set([...(this.edits.get(key) ?? []), ...Object.keys(fields)]));
    this.dirty.add(key);
    this.changed();
    await this.engine.addPendingRecordChanges([{kind: "save", zoneID, recordName}]);
    return record;
  }

  /** Deletes a record here at once and queues the delete; settles once stored. */
  async delete(zone, recordName) {
    const zoneID = this.engine.canonicalZoneID(zone);
    const key = this.key(zoneID, recordName);
    this.copy.get(zoneID.key)?.records.delete(recordName);
    this.edits.delete(key);
    this.dirty.add(key);
    this.changed();
    await this.engine.addPendingRecordChanges([{kind: "delete", zoneID, recordName}]);
  }

  /**
   * Sends what waits, then fetches what changed ("Sync now", or told by a
   * push): one attempt, as CloudKit JS's calls are, so it rejects at the
   * first refused connection (NETWORK_FAILURE) instead of waiting out the
   * retries. Automatic sync's own retries give way to it and go on after.
   * `retries`: send again after a retryable error this many times (0).
   */
  async sync({signal, retries = 0} = {}) {
    await this.signedInNow("syncs again");
    if (this.engine.hasPendingChanges) await this.engine.sendChanges({signal, retries});
    await this.engine.fetchChanges({signal, retries});
  }

  /**
   * Settles once everything queued now is answered by the server (saved,
   * or refused and reported to onError): waits through outages, where
   * sync() would reject. Rejects (AbortError) when `signal` aborts, on
   * close() or on sign-out, and (NOT_AUTHENTICATED) while signed out.
   */
  async whenSent(options) {
    await this.signedInNow("sends what waits");
    return this.engine.whenSent(options);
  }

  /** Stops syncing and waits for the last write; the stored copy stays. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    this.stopFollowing?.();
    await this.pausing;
    await this.engine.stop();
    await this.writing;
    await this.storage.close?.();
  }

  /** Closes and deletes what the storage kept (signing out on a shared device). */
  async forget() {
    await this.close();
    await this.storage.clear();
  }

  // MARK: Following the session

  /** Once a pause or resume under way is done: refuses (NOT_AUTHENTICATED) while signed out. */
  async signedInNow(what) {
    await this.pausing;
    if (this.paused) throw new CanopyError(ErrorCode.NOT_AUTHENTICATED, `Signed out: this copy ${what} when its user signs in`);
  }

  /** Pauses on sign-out (here or in another tab); resumes when the same user signs in again. */
  authChanged(event, session) {
    if (this.closed) return;
    const who = session?.user?.userRecordName ?? null;
    if (event === "SIGNED_OUT" && !this.paused) {
      this.paused = true;
      const engine = this.engine;
      this.pausing = this.pausing.then(() => engine.stop()).finally(() => this.changed());
      this.changed();
    } else if ((event === "SIGNED_IN" || event === "TOKEN_REFRESHED") && this.paused && who && (this.user === null || who === this.user)) {
      this.user = who;
      this.paused = false;
      const stopped = this.engine;
      this.pausing = this.pausing.then(async () => {
        await stopped.stop();
        if (this.closed || this.paused) return;
        this.engine = new SyncEngine({database: this.database, state: stopped.state, delegate: this, automaticallySync: this.automaticallySync, ...this.engineOptions});
        this.changed();
      });
    }
  }

  // MARK: The engine's delegate

  /** @internal The engine asks for the record of a queued save. */
  recordToSave(zoneID, recordName) {
    return this.copy.get(zoneID.key)?.records.get(recordName) ?? null;
  }

  /** @internal Every engine event, in order; a stateUpdate is stored before the engine goes on. */
  async handleEvent(event, engine) {
    let copyChanged = true;
    switch (event.type) {
    case "stateUpdate":
      await this.persist(event.state);
      copyChanged = false;
      break;
    case "fetchedDatabaseChanges":
      for (const zone of event.changedZones) {
        const entry = this.zoneEntry(zone);
        entry.shareURL = zone.share?.url ?? entry.shareURL ?? null;
      }
      for (const zone of event.deletedZones) this.dropZone(engine.canonicalZoneID(zone).key, engine);
      break;
    case "fetchedRecordZoneChanges": {
      const entry = this.zoneEntry(event.zoneID);
      for (const record of event.changed) {
        const waiting = event.pending[record.recordName];
        if (waiting === "delete") continue;   // deleted here, not yet sent
        this.take(event.zoneID, entry, record, waiting === "save");
      }
      for (const {recordName} of event.deleted) {
        if (event.pending[recordName] === "save") continue;   // edited here: the edit wins, sent as new
        entry.records.delete(recordName);
        this.forgetEdits(event.zoneID, recordName);
      }
      break;
    }
    case "sentRecordZoneChanges": {
      const entry = this.zoneEntry(event.zoneID);
      for (const record of event.savedRecords) {
        const waiting = event.pending[record.recordName];
        if (waiting === "delete") continue;
        this.take(event.zoneID, entry, record, waiting === "save");
      }
      for (const name of event.deletedRecordNames) this.forgetEdits(event.zoneID, name);
      for (const {recordName, error} of event.failedRecordSaves) this.refused(event.zoneID, entry, recordName, error);
      for (const {recordName, error} of event.failedRecordDeletes) {
        this.report(error);
        this.refetch(event.zoneID, recordName);
      }
      break;
    }
    case "changeTokenExpired": {
      // Fetched again from nothing: keep only what waits to be sent.
      const waiting = new Set(engine.pendingRecordChanges.map((change) => this.key(change.zoneID, change.recordName)));
      for (const [zoneKey, entry] of this.copy) {
        if (event.zoneID && zoneKey !== engine.canonicalZoneID(event.zoneID).key) continue;
        for (const name of [...entry.records.keys()]) {
          const key = zoneKey + separator + name;
          if (waiting.has(key)) continue;
          entry.records.delete(name);
          this.edits.delete(key);
          this.dirty.add(key);
        }
      }
      break;
    }
    case "error":
      this.report(event.error);
      copyChanged = false;
      break;
    default:
      copyChanged = false;
    }
    // What a page or an answer changed is written with the state as it is
    // now (its tokens not yet past the page), so the copy is never behind
    // what the stored state says was applied.
    if (copyChanged) await this.persist(engine.state);
    await this.onEvent?.(event, engine);
    this.changed();
  }

  // MARK: Merging

  /** A record from the server into the copy; with an edit still waiting, the edited fields stay on top. */
  take(zoneID, entry, record, editWaits) {
    const key = this.key(zoneID, record.recordName);
    if (editWaits) {
      entry.records.set(record.recordName, this.underEdits(key, record, entry.records.get(record.recordName)));
    } else {
      entry.records.set(record.recordName, record);
      this.edits.delete(key);
    }
    this.dirty.add(key);
  }

  /** The server's record with the fields edited here (from `mine`) on top; its change tag is the server's. */
  underEdits(key, server, mine) {
    const edited = this.edits.get(key);
    if (!edited?.size || !mine) return server;
    const fields = {...server.fields};
    for (const name of edited) {
      if (name in mine.fields) fields[name] = mine.fields[name]; else delete fields[name];
    }
    return new CanopyRecord({...server, fields});
  }

  /** A save the server refused: merged and sent again, saved again as new, or shown as the server has it. */
  refused(zoneID, entry, recordName, error) {
    const key = this.key(zoneID, recordName);
    const mine = entry.records.get(recordName);
    if (error?.code === ErrorCode.SERVER_RECORD_CHANGED && error.serverRecord) {
      entry.records.set(recordName, this.underEdits(key, error.serverRecord, mine));
      this.dirty.add(key);
      this.engine.addPendingRecordChanges([{kind: "save", zoneID, recordName}]);
    } else if (error?.code === ErrorCode.UNKNOWN_ITEM && mine) {
      // Deleted elsewhere while edited here: the edit wins, and the record
      // comes back as new, whole. The fields edited here stay the ones that
      // win a conflict: if another device made the record again meanwhile,
      // its fields stay its own (taking every field as edited here wrote
      // another device's old value over its new one: the fault run's seed 48).
      entry.records.set(recordName, new CanopyRecord({...mine, recordChangeTag: null}));
      if (!this.edits.get(key)?.size) this.edits.set(key, new Set(Object.keys(mine.fields)));
      this.dirty.add(key);
      this.engine.addPendingRecordChanges([{kind: "save", zoneID, recordName}]);
    } else {
      this.report(error);
      this.refetch(zoneID, recordName);
    }
  }

  /**
   * After a refusal: the server's copy of the record (or none) in the local
   * copy, as the app should show what is really there. Kept in the stored
   * copy until done, so a restart reads it again; tried until the server
   * answers, unless a newer change of the record waits.
   */
  async refetch(zoneID, recordName) {
    const key = this.key(zoneID, recordName);
    if (this.toRefetch.has(key) && this.toRefetch.get(key).running) return;
    this.toRefetch.set(key, {zoneID, recordName, running: true});
    await this.persist(this.engine.state);
    for (;;) {
      if (this.closed) return;
      let record = null;
      try {
        [{record}] = await this.database.lookup(zoneID, [recordName]);
      } catch (error) {
        if (error?.code !== ErrorCode.ZONE_NOT_FOUND && error?.code !== ErrorCode.PERMISSION_FAILURE) {
          await new Promise((resolve) => setTimeout(resolve, 500));
          continue;
        }
      }
      this.toRefetch.delete(key);
      const newer = this.engine.pendingRecordChanges.some((change) => change.zoneID.key === zoneID.key && change.recordName === recordName);
      if (!newer) {
        const entry = this.zoneEntry(zoneID);
        if (record) entry.records.set(recordName, record); else entry.records.delete(recordName);
        this.edits.delete(key);
        this.dirty.add(key);
      }
      await this.persist(this.engine.state);
      this.changed();
      return;
    }
  }

  // MARK: Storing

  /**
   * Writes what changed since the last write with `state`, in one call of
   * the adapter (one transaction); writes are made one at a time, in order.
   * A write that fails is reported and its records go with the next.
   */
  persist(state) {
    const write = this.takeWrite(state);
    const done = this.writing.then(() => this.storage.write(write));
    this.writing = done.catch((error) => {
      for (const {zoneKey, recordName} of [...write.put, ...write.remove]) this.dirty.add(zoneKey + separator + recordName);
      for (const zoneKey of write.removeZones) this.removedZones.add(zoneKey);
      this.report(error);
    });
    return done;
  }

  /** What the next write holds: the state, the zones, edits and refetches whole; the records changed. */
  takeWrite(state) {
    const put = [], remove = [];
    for (const key of this.dirty) {
      const [zoneKey, recordName] = key.split(separator);
      const record = this.copy.get(zoneKey)?.records.get(recordName);
      if (record) put.push({zoneKey, recordName, record: record.toJSON()});
      else remove.push({zoneKey, recordName});
    }
    this.dirty.clear();
    const removeZones = [...this.removedZones];
    this.removedZones.clear();
    const zones = Object.fromEntries([...this.copy].map(([key, {zoneID, shareURL}]) => [key, {zoneID: zoneID.toJSON(), shareURL}]));
    const edits = {};
    for (const [key, fields] of this.edits) {
      const [zoneKey, recordName] = key.split(separator);
      (edits[zoneKey] ??= {})[recordName] = [...fields];
    }
    const refetch = [...this.toRefetch.values()].map(({zoneID, recordName}) => ({zoneID: zoneID.toJSON(), recordName}));
    return {state, zones, edits, refetch, put, remove, removeZones};
  }

  // MARK: Helpers

  key(zoneID, recordName) {
    return this.engine.canonicalZoneID(zoneID).key + separator + recordName;
  }

  zoneEntry(zone) {
    const zoneID = this.engine.canonicalZoneID(zone);
    let entry = this.copy.get(zoneID.key);
    if (!entry) {
      entry = {zoneID, shareURL: null, records: new Map()};
      this.copy.set(zoneID.key, entry);
    }
    return entry;
  }

  /**
   * The zone was deleted on the server: its copy goes, but for the records
   * with a save still waiting. An edit queued before this device heard of
   * the deletion may have been made after the zone was made again under
   * its name (the feed cannot say which), so it is kept as a new record
   * (no change tag) and sent: it lands in the zone made again (merged as
   * any conflict, by the fields edited here, if another device made the
   * record there first), or is refused as ZONE_NOT_FOUND (reported) when
   * there is none. Dropping it lost edits (the fault run's seed 47).
   */
  dropZone(zoneKey, engine) {
    const entry = this.copy.get(zoneKey);
    const waiting = new Set(engine.pendingRecordChanges.filter((change) => change.kind === "save" && change.zoneID.key === zoneKey)
      .map((change) => change.recordName).filter((name) => entry?.records.has(name)));
    const inZone = (key) => key.startsWith(zoneKey + separator);
    if (waiting.size === 0) {
      this.copy.delete(zoneKey);
      this.removedZones.add(zoneKey);
      for (const key of [...this.edits.keys()]) if (inZone(key)) this.edits.delete(key);
      for (const key of [...this.dirty]) if (inZone(key)) this.dirty.delete(key);
      return;
    }
    entry.shareURL = null;
    for (const [name, record] of [...entry.records]) {
      const key = zoneKey + separator + name;
      if (waiting.has(name)) {
        entry.records.set(name, new CanopyRecord({...record, recordChangeTag: null}));
      } else {
        entry.records.delete(name);
        this.edits.delete(key);
      }
      this.dirty.add(key);
    }
  }

  forgetEdits(zoneID, recordName) {
    const key = this.key(zoneID, recordName);
    this.edits.delete(key);
    this.dirty.add(key);
  }

  report(error) {
    if (this.onError) this.onError(error);
  }

  changed() {
    for (const listener of this.listeners) {
      try { listener(this); } catch (error) { this.report(error); }
    }
  }
}

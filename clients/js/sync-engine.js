// The web's counterpart of CanopyKit's SyncEngine (CKSyncEngine): the app
// keeps its own copy of a database and says what it changed; the engine
// sends those changes in batches and fetches what others changed, keeping
// its tokens and queue in a state the app stores as JSON wherever it likes.

import {CanopyError, ErrorCode} from "./errors.js";
import {maximumBatchSize} from "./database.js";
import {ZoneID, recordInput} from "./records.js";
import {stringifyJSON} from "./values.js";

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) { reject(signal.reason); return; }
  const timer = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
  const onAbort = () => { clearTimeout(timer); reject(signal.reason); };
  signal?.addEventListener("abort", onAbort, {once: true});
});

function sameFields(sent, stored) {
  const canonical = (fields) => stringifyJSON(Object.fromEntries(Object.entries(fields).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)));
  return canonical(sent) === canonical(recordInput(stored).fields);
}

/**
 * delegate.recordToSave(zoneID, recordName): the record to send for a
 * pending save (a CanopyRecord or {recordName, recordType, fields,
 * recordChangeTag}), or null to drop it.
 * delegate.handleEvent(event): applies what was fetched and learns what was
 * sent; awaited, in order. Events: stateUpdate {state},
 * fetchedDatabaseChanges {changedZones, deletedZones},
 * fetchedRecordZoneChanges {zoneID, changed, deleted},
 * sentDatabaseChanges {savedZones, deletedZones, failedZones},
 * sentRecordZoneChanges {zoneID, savedRecords, deletedRecordNames,
 * failedRecordSaves [{recordName, record, error}], failedRecordDeletes},
 * changeTokenExpired {zoneID (null: the whole database)},
 * willFetchChanges, didFetchChanges, willSendChanges, didSendChanges,
 * error {error} (automatic sync only: a fetch or send that failed after
 * its retries; the next cue tries again).
 */
export class SyncEngine {
  /**
   * database: a Database of a Container. state: what an earlier engine's
   * stateUpdate gave (or JSON.parse of it); absent: start from nothing.
   * automaticallySync: listen on the WebSocket and fetch on each change,
   * and send about 100 ms after changes are added (call stop() when done).
   */
  constructor({database, state = null, delegate, automaticallySync = false, maximumRetries = 12, pageSize = 400} = {}) {
    if (!database?.scope) throw new TypeError("SyncEngine needs a database (container.privateDatabase, …)");
    if (!delegate?.handleEvent || !delegate?.recordToSave) throw new TypeError("SyncEngine needs a delegate with recordToSave and handleEvent");
    this.database = database;
    this.delegate = delegate;
    this.maximumRetries = maximumRetries;
    this.pageSize = pageSize;
    /** Requests sent again after a retryable error (service unavailable, rate limit, network). */
    this.retries = 0;
    /** The batch size the next send starts from; halved after LIMIT_EXCEEDED. */
    this.batchSize = maximumBatchSize;
    this.databaseToken = state?.databaseToken ?? null;
    this.zoneTokens = new Map(Object.entries(state?.zoneTokens ?? {}));
    this.pendingZones = new Map((state?.pendingZoneChanges ?? []).map((change) => [ZoneID.from(change.zoneID).key, {...change, zoneID: ZoneID.from(change.zoneID)}]));
    this.pendingRecords = new Map();
    this.sequence = 0;
    for (const change of state?.pendingRecordChanges ?? []) this.queueRecord(change);
    this.running = Promise.resolve();
    this.automaticallySync = automaticallySync;
    this.stopped = false;
    if (automaticallySync) {
      this.listen();
      this.changed();   // changes queued before a restart go out without waiting for another edit
    }
  }

  // MARK: State

  /** The state to store (JSON-safe): tokens and the queue. */
  get state() {
    return {
      version: 1,
      databaseToken: this.databaseToken,
      zoneTokens: Object.fromEntries(this.zoneTokens),
      pendingZoneChanges: [...this.pendingZones.values()].map(({kind, zoneID}) => ({kind, zoneID: zoneID.toJSON()})),
      pendingRecordChanges: [...this.pendingRecords.values()].map(({kind, zoneID, recordName}) => ({kind, zoneID: zoneID.toJSON(), recordName})),
    };
  }

  /** The pending record changes: [{kind: "save" | "delete", zoneID, recordName}]. */
  get pendingRecordChanges() {
    return [...this.pendingRecords.values()].map(({kind, zoneID, recordName}) => ({kind, zoneID, recordName}));
  }

  queueRecord({kind, zoneID, recordName}) {
    if (kind !== "save" && kind !== "delete") throw new TypeError(`a pending record change is save or delete, not ${kind}`);
    const zone = ZoneID.from(zoneID);
    const key = `${zone.key}\u0000${recordName}`;
    this.pendingRecords.delete(key);   // the latest goes last
    this.pendingRecords.set(key, {kind, zoneID: zone, recordName, sequence: ++this.sequence});
  }

  /** Queues record changes: [{kind: "save" | "delete", zoneID, recordName}]; a later change of a record replaces an earlier one. */
  addPendingRecordChanges(changes) {
    for (const change of changes) this.queueRecord(change);
    this.changed();
  }

  /** Queues zone changes: [{kind: "save" | "delete", zoneID}]. */
  addPendingZoneChanges(changes) {
    for (const change of changes) {
      if (change.kind !== "save" && change.kind !== "delete") throw new TypeError(`a pending zone change is save or delete, not ${change.kind}`);
      const zoneID = ZoneID.from(change.zoneID);
      this.pendingZones.set(zoneID.key, {kind: change.kind, zoneID});
    }
    this.changed();
  }

  changed() {
    if (this.pendingRecords.size === 0 && this.pendingZones.size === 0) return;
    if (!this.automaticallySync || this.stopped || this.sendTimer) return;
    this.sendTimer = setTimeout(() => {
      this.sendTimer = null;
      this.sendChanges().catch((error) => this.report(error));
    }, 100);
  }

  async emit(event) {
    await this.delegate.handleEvent(event, this);
  }

  async stateUpdate() {
    await this.emit({type: "stateUpdate", state: this.state});
  }

  /** Runs one fetch or send at a time. */
  exclusive(work) {
    const run = this.running.then(work, work);
    this.running = run.catch(() => {});
    return run;
  }

  /** Sends a request again after retryable errors, after Retry-After or a pause growing from 0.5 to 5 s. */
  async retrying(request, signal) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await request(attempt);
      } catch (error) {
        if (!(error instanceof CanopyError) || !error.isRetryable || attempt >= this.maximumRetries || this.stopped) throw error;
        this.retries += 1;
        const pause = error.retryAfter !== undefined ? error.retryAfter * 1000 : Math.min(500 * 2 ** attempt, 5000);
        await sleep(pause, signal);
      }
    }
  }

  // MARK: Fetching

  /**
   * Fetches what changed since the stored tokens: the database feed, then
   * each changed zone's feed page by page (or, in the public database, its
   * one zone). Restarted from a stored state it fetches only what changed.
   */
  fetchChanges({signal} = {}) {
    return this.exclusive(() => this.fetchNow(signal));
  }

  async fetchNow(signal) {
    await this.emit({type: "willFetchChanges"});
    if (this.database.scope === "PUBLIC") {
      await this.fetchZone(ZoneID.default, signal);
    } else {
      let token = this.databaseToken;
      const changed = new Map();
      for (;;) {
        let page;
        try {
          page = await this.retrying(() => this.database.databaseChanges({since: token, signal}), signal);
        } catch (error) {
          if (error?.code !== ErrorCode.CHANGE_TOKEN_EXPIRED || token === null) throw error;
          await this.emit({type: "changeTokenExpired", zoneID: null});
          token = null;
          this.databaseToken = null;
          this.zoneTokens.clear();
          changed.clear();
          continue;
        }
        for (const zone of page.changedZones) changed.set(zone.key, zone);
        for (const zone of page.deletedZones) { changed.delete(zone.key); this.zoneTokens.delete(zone.key); }
        await this.emit({type: "fetchedDatabaseChanges", changedZones: page.changedZones, deletedZones: page.deletedZones});
        token = page.token;
        if (!page.moreComing) break;
      }
      for (const zone of changed.values()) await this.fetchZone(zone, signal);
      // Stored only after every changed zone was fetched: a crash before this fetches them again.
      this.databaseToken = token;
      await this.stateUpdate();
    }
    await this.emit({type: "didFetchChanges"});
  }

  async fetchZone(zoneID, signal) {
    let token = this.zoneTokens.get(zoneID.key) ?? null;
    const request = (since) => {
      const page = this.retrying(() => this.database.zoneChanges(zoneID, {since, limit: this.pageSize, signal}), signal);
      page.catch(() => {});   // awaited below; not an unhandled rejection meanwhile
      return page;
    };
    let next = request(token);
    for (;;) {
      let page;
      try {
        page = await next;
      } catch (error) {
        if (error?.code === ErrorCode.CHANGE_TOKEN_EXPIRED && token !== null) {
          await this.emit({type: "changeTokenExpired", zoneID});
          token = null;
          this.zoneTokens.delete(zoneID.key);
          next = request(token);
          continue;
        }
        if (error?.code === ErrorCode.ZONE_NOT_FOUND) {   // deleted or no longer shared since the database feed said otherwise
          this.zoneTokens.delete(zoneID.key);
          await this.emit({type: "fetchedDatabaseChanges", changedZones: [], deletedZones: [zoneID]});
          return;
        }
        throw error;
      }
      // The next page is asked for before this one is handed over, so the
      // app's work (storing the records) overlaps the server's.
      if (page.moreComing) next = request(page.token);
      await this.emit({type: "fetchedRecordZoneChanges", zoneID, changed: page.changed, deleted: page.deleted});
      token = page.token;
      this.zoneTokens.set(zoneID.key, token);
      await this.stateUpdate();
      if (!page.moreComing) return;
    }
  }

  // MARK: Sending

  /**
   * Sends the pending changes: zones first, then records in batches of at
   * most 400 (halved after LIMIT_EXCEEDED), not atomic, each save checked
   * against its change tag. A refused save leaves the queue and comes to
   * the delegate in failedRecordSaves (on SERVER_RECORD_CHANGED, merge with
   * error.serverRecord and queue the save again).
   */
  sendChanges({signal} = {}) {
    return this.exclusive(() => this.sendNow(signal));
  }

  async sendNow(signal) {
    if (this.pendingZones.size === 0 && this.pendingRecords.size === 0) return;
    await this.emit({type: "willSendChanges"});
    if (this.pendingZones.size > 0) await this.sendZones(signal);
    for (;;) {
      const zone = [...this.pendingRecords.values()][0]?.zoneID;
      if (!zone) break;
      const batch = [...this.pendingRecords.values()].filter((change) => change.zoneID.key === zone.key).slice(0, this.batchSize);
      const [before, size] = [this.pendingRecords.size, this.batchSize];
      await this.sendBatch(zone, batch, signal);
      // A pass that settled nothing and did not shrink the batch would repeat forever
      // (a delegate queueing again at once after every failure): leave the rest for the next send.
      if (this.pendingRecords.size >= before && this.batchSize === size && batch.every((change) => this.pendingRecords.has(`${change.zoneID.key}\u0000${change.recordName}`))) break;
    }
    await this.emit({type: "didSendChanges"});
  }

  async sendZones(signal) {
    const savedZones = [], deletedZones = [], failedZones = [];
    for (const change of [...this.pendingZones.values()]) {
      try {
        if (change.kind === "save") { await this.retrying(() => this.database.saveZone(change.zoneID, {signal}), signal); savedZones.push(change.zoneID); }
        else { await this.retrying(() => this.database.deleteZone(change.zoneID, {signal}), signal); deletedZones.push(change.zoneID); }
      } catch (error) {
        if (change.kind === "delete" && error?.code === ErrorCode.ZONE_NOT_FOUND) deletedZones.push(change.zoneID);
        else if (error instanceof CanopyError && !error.isRetryable) failedZones.push({zoneID: change.zoneID, kind: change.kind, error});
        else throw error;
      }
      if (this.pendingZones.get(change.zoneID.key) === change) this.pendingZones.delete(change.zoneID.key);
    }
    await this.emit({type: "sentDatabaseChanges", savedZones, deletedZones, failedZones});
    await this.stateUpdate();
  }

  async sendBatch(zoneID, batch, signal) {
    const saves = [], deletes = [], dropped = [];
    for (const change of batch) {
      if (change.kind === "delete") { deletes.push(change); continue; }
      const record = await this.delegate.recordToSave(zoneID, change.recordName);
      if (record) saves.push({change, record, input: recordInput(record)});
      else dropped.push(change);
    }
    for (const change of dropped) this.settle(change);
    if (saves.length === 0 && deletes.length === 0) return;
    let result, resent = false;
    try {
      result = await this.retrying((attempt) => {
        resent = attempt > 0;
        return this.database.modify(zoneID, {save: saves.map((save) => save.record), delete: deletes.map((change) => change.recordName), atomic: false, signal});
      }, signal);
    } catch (error) {
      if (error?.code === ErrorCode.LIMIT_EXCEEDED && batch.length > 1) {
        this.batchSize = Math.max(1, Math.floor(batch.length / 2));
        return;
      }
      if (error?.code === ErrorCode.ZONE_NOT_FOUND || error?.code === ErrorCode.PERMISSION_FAILURE) {
        // The whole zone refuses: every change of the batch fails, and leaves the queue.
        for (const change of batch) this.settle(change);
        await this.emit({type: "sentRecordZoneChanges", zoneID, savedRecords: [], deletedRecordNames: [],
          failedRecordSaves: saves.map(({change, record}) => ({recordName: change.recordName, record, error})),
          failedRecordDeletes: deletes.map((change) => ({recordName: change.recordName, error}))});
        await this.stateUpdate();
        return;
      }
      throw error;
    }
    const savedRecords = [...result.saved], deletedRecordNames = [...result.deleted];
    const failedRecordSaves = [], failedRecordDeletes = [];
    const errors = new Map(result.errors.map((error) => [error.recordName, error]));
    for (const save of saves) {
      const error = errors.get(save.change.recordName);
      if (!error) continue;
      // A batch sent again after the connection dropped may have committed
      // the first time: the "conflict" is then with our own write.
      if (resent && error.code === ErrorCode.SERVER_RECORD_CHANGED && error.serverRecord && sameFields(save.input.fields, error.serverRecord)) {
        savedRecords.push(error.serverRecord);
        continue;
      }
      failedRecordSaves.push({recordName: save.change.recordName, record: save.record, error});
    }
    for (const change of deletes) {
      const error = errors.get(change.recordName);
      if (!error) continue;
      if (error.code === ErrorCode.UNKNOWN_ITEM) deletedRecordNames.push(change.recordName);   // already gone
      else failedRecordDeletes.push({recordName: change.recordName, error});
    }
    for (const change of [...saves.map((save) => save.change), ...deletes]) this.settle(change);
    await this.emit({type: "sentRecordZoneChanges", zoneID, savedRecords, deletedRecordNames, failedRecordSaves, failedRecordDeletes});
    await this.stateUpdate();
  }

  /** Leaves the queue unless the record was changed again while it was being sent. */
  settle(change) {
    const key = `${change.zoneID.key}\u0000${change.recordName}`;
    if (this.pendingRecords.get(key)?.sequence === change.sequence) this.pendingRecords.delete(key);
  }

  // MARK: Automatic sync

  async listen() {
    const controller = new AbortController();
    this.listening = controller;
    let fetching = null, again = false;
    const cue = () => {
      if (fetching) { again = true; return; }
      fetching = this.fetchChanges({signal: controller.signal}).catch((error) => this.report(error)).finally(() => {
        fetching = null;
        if (again && !this.stopped) { again = false; cue(); }
      });
    };
    cue();
    if (this.database.scope === "PUBLIC") return;
    try {
      for await (const _ of this.database.watchDatabase({since: this.databaseToken, signal: controller.signal})) cue();
    } catch (error) {
      if (!this.stopped) this.report(error);
    }
  }

  report(error) {
    if (this.stopped && error?.name === "AbortError") return;
    try {
      Promise.resolve(this.delegate.handleEvent({type: "error", error}, this)).catch(() => {});
    } catch { /* the delegate's own failure to handle a failure */ }
  }

  /** Stops listening and the delayed send; waits for the work in progress. */
  async stop() {
    this.stopped = true;
    if (this.sendTimer) { clearTimeout(this.sendTimer); this.sendTimer = null; }
    this.listening?.abort();
    await this.running;
  }
}

// The web's counterpart of CanopyKit's SyncEngine (CKSyncEngine): the app
// keeps its own copy of a database and says what it changed; the engine
// sends those changes in batches and fetches what others changed, keeping
// its tokens and queue in a state the app stores as JSON wherever it likes.

import {CanopyError, ErrorCode} from "./errors.js";
import {maximumBatchSize} from "./database.js";
import {ZoneID, recordInput} from "./records.js";
import {stringifyJSON} from "./values.js";

/** Waits `ms`; rejects with the reason of the first of `signals` to abort. */
const sleep = (ms, ...given) => new Promise((resolve, reject) => {
  const signals = given.filter(Boolean);
  const aborted = signals.find((signal) => signal.aborted);
  if (aborted) { reject(aborted.reason); return; }
  const stop = () => { for (const signal of signals) signal.removeEventListener("abort", onAbort); };
  const timer = setTimeout(() => { stop(); resolve(); }, ms);
  function onAbort() { clearTimeout(timer); stop(); reject(this.reason); }
  for (const signal of signals) signal.addEventListener("abort", onAbort, {once: true});
});

/**
 * How long automatic sync waits before it tries again after a fetch or a
 * send failed (the server away longer than the retries): doubling from 1 s
 * to 60 s, a random half of it added so that many clients coming back do
 * not all arrive at once. It keeps trying for as long as changes wait.
 */
export function resumeDelay(failures, random = Math.random) {
  const base = Math.min(1000 * 2 ** Math.min(failures, 6), 60_000);
  return base / 2 + random() * base / 2;
}

/** The codes that mean the server cannot be reached now (not that it refused). */
const unreachable = new Set([ErrorCode.NETWORK_FAILURE, ErrorCode.SERVICE_UNAVAILABLE]);

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
 * fetchedDatabaseChanges {changedZones, deletedZones} (a zone in both was
 * deleted and made again under its name: drop it first; it is fetched again;
 * keep the records with a save waiting, without their change tag: the edit
 * may be newer than the zone made again, and goes to it as a new record),
 * fetchedRecordZoneChanges {zoneID, changed, deleted, pending} (pending:
 * the names among them with a change of the app's own still waiting, →
 * "save" | "delete": merge the fetched version under the local edit, keep
 * the fetched recordChangeTag, as on a conflict; replacing the local copy
 * would send the fetched fields instead of the edit),
 * sentDatabaseChanges {savedZones, deletedZones, failedZones},
 * sentRecordZoneChanges {zoneID, savedRecords, deletedRecordNames,
 * failedRecordSaves [{recordName, record, error}], failedRecordDeletes,
 * pending} (pending: the names the app changed again while the batch was
 * out, whose newer change still waits: take only the saved record's
 * recordChangeTag, keep the local edit),
 * changeTokenExpired {zoneID (null: the whole database)} (drop the local
 * copy, but keep the records in pendingRecordChanges: their edits are not
 * on the server yet),
 * willFetchChanges, didFetchChanges, willSendChanges, didSendChanges,
 * serverReachabilityChanged {reachable} (false: the server cannot be
 * reached now, and what waits is sent when it can),
 * error {error} (automatic sync only: a fetch or send that failed after
 * its retries; the engine tries again by itself).
 *
 * Zones: every zone the engine names, in events and in its state, is in
 * one form a database has (ZoneID.canonical): in the private database
 * without its owner (it is the caller), in the shared database with it.
 * A change queued with "Sync", {zoneName: "Sync"} or the ZoneID a feed
 * reported is one key, `zoneID.key`.
 *
 * State: every change to what waits (queued, sent, refused, confirmed) is
 * a stateUpdate, so an app that stores each one loses no edit to a
 * restart. It holds the pending changes and the batch in flight: after a
 * restart mid-send, a save the server already has is taken as saved, not
 * as a conflict with itself.
 */
export class SyncEngine {
  /**
   * database: a Database of a Container. state: what an earlier engine's
   * stateUpdate gave (or JSON.parse of it); absent: start from nothing.
   * automaticallySync: listen on the WebSocket and fetch on each change,
   * and send about 100 ms after changes are added (call stop() when done).
   */
  constructor({database, state = null, delegate, automaticallySync = false, maximumRetries = 12, pageSize = 400, firstSyncRanges = 8} = {}) {
    if (!database?.scope) throw new TypeError("SyncEngine needs a database (container.privateDatabase, …)");
    if (!delegate?.handleEvent || !delegate?.recordToSave) throw new TypeError("SyncEngine needs a delegate with recordToSave and handleEvent");
    this.database = database;
    this.delegate = delegate;
    this.maximumRetries = maximumRetries;
    this.pageSize = pageSize;
    /** A zone with no token is read in this many ranges at once (zoneRanges); 0 or 1: one chain of pages. */
    this.firstSyncRanges = firstSyncRanges;
    /** Requests sent again after a retryable error (service unavailable, rate limit, network). */
    this.retries = 0;
    /** The batch size the next send starts from; halved after LIMIT_EXCEEDED. */
    this.batchSize = maximumBatchSize;
    this.databaseToken = state?.databaseToken ?? null;
    // Keys of an earlier version's state may name a private zone with its owner.
    this.zoneTokens = new Map(Object.entries(state?.zoneTokens ?? {}).map(([key, token]) => [this.canonicalKey(key), token]));
    /** First syncs under way: zone key → {zoneID, position, ranges: [token | null (read)]}. */
    this.zoneRanges = new Map(Object.entries(state?.zoneRanges ?? {}).map(([key, run]) =>
      [this.canonicalKey(key), {zoneID: this.canonicalZoneID(run.zoneID), position: run.position, ranges: [...run.ranges]}]));
    /**
     * Records saved into a zone not yet followed (no token, no first sync
     * under way): zone key → {recordName: recordType}. Nothing tells which
     * of the zone's lives a save reached, so the zone's first full fetch
     * reports each one it lacks as deleted (gone with a zone deleted and
     * made again before that fetch; the fault run's seed 14).
     */
    this.savedUnfollowed = new Map(Object.entries(state?.savedUnfollowed ?? {}).map(([key, names]) => [this.canonicalKey(key), {...names}]));
    this.pendingZones = new Map();
    for (const change of state?.pendingZoneChanges ?? []) {
      const zoneID = this.canonicalZoneID(change.zoneID);
      this.pendingZones.set(zoneID.key, {kind: change.kind, zoneID});
    }
    this.pendingRecords = new Map();
    this.sequence = 0;
    for (const change of state?.pendingRecordChanges ?? []) this.queueRecord(change);
    /** Keys of record changes sent without an answer (here, or before a restart): the server may have them. */
    this.inFlight = new Set((state?.inFlight ?? []).map((change) => this.recordKey(this.canonicalZoneID(change.zoneID), change.recordName)));
    this.running = Promise.resolve();
    this.stateUpdates = Promise.resolve();
    this.automaticallySync = automaticallySync;
    this.stopped = false;
    /** null until the first answer or failure; then whether the server could be reached. */
    this.serverReachable = null;
    /** Automatic sync's failures in a row, for the pause before it tries again. */
    this.failures = 0;
    this.resumeTimer = null;
    /** Calls (sync(), sendChanges or fetchChanges with `retries`) waiting for their turn: background retries give way to them. */
    this.callersWaiting = 0;
    /** The background's pauses between retries under way (first syncs read ranges at once): a waiting caller ends them. */
    this.pauses = new Set();
    /** Errors a background retry gave up on for a waiting caller: not reported (the caller hears its own). */
    this.yielded = new WeakSet();
    /** The retries the run under way allows (runs are one at a time, see exclusive): a caller's, or maximumRetries. */
    this.retryLimit = maximumRetries;
    /** whenSent() calls waiting: {records, zones, resolve, reject}. */
    this.sentWaiters = new Set();
    if (automaticallySync) {
      this.listen();
      this.watchSurroundings();
      this.changed();   // changes queued before a restart go out without waiting for another edit
    }
  }

  // MARK: Zones

  /**
   * A zone in the one form this engine names it, in events, in its state
   * and to recordToSave (see the class comment): key a local store by
   * `canonicalZoneID(zone).key` and every way of naming a zone is one key.
   */
  canonicalZoneID(zone) {
    const zoneID = ZoneID.from(zone);
    if (this.database.scope === "PUBLIC") return zoneID.zoneName === ZoneID.default.zoneName && !zoneID.ownerName ? zoneID : ZoneID.default;
    if (this.database.scope === "PRIVATE" && zoneID.ownerName) return new ZoneID(zoneID.zoneName);
    return zoneID;
  }

  /** A stored zone key ("owner/name" or "name") in canonical form (zone names hold no "/"). */
  canonicalKey(key) {
    if (this.database.scope !== "PRIVATE") return key;
    const slash = key.lastIndexOf("/");
    return slash < 0 ? key : key.slice(slash + 1);
  }

  /** The zone a stored key names ("owner/name" or "name"). */
  zoneIDFromKey(key) {
    const slash = key.lastIndexOf("/");
    return this.canonicalZoneID(slash < 0 ? new ZoneID(key) : new ZoneID(key.slice(slash + 1), key.slice(0, slash)));
  }

  /** A zone is gone or its copy dropped: nothing of it is followed any more. */
  forgetZone(key) {
    this.zoneTokens.delete(key);
    this.zoneRanges.delete(key);
    this.savedUnfollowed.delete(key);
  }

  /** A page handed over: the saves it holds need no report of their own. */
  delivered(zoneID, page) {
    const saved = this.savedUnfollowed.get(zoneID.key);
    if (!saved) return;
    for (const record of page.changed) delete saved[record.recordName];
    for (const tombstone of page.deleted) delete saved[tombstone.recordName];
  }

  recordKey(zoneID, recordName) {
    return `${zoneID.key}\u0000${recordName}`;
  }

  /**
   * The records of a fetched page that have a change of their own waiting
   * (name → "save" | "delete"): the app must not let the fetched version
   * replace an edit not yet sent (see fetchedRecordZoneChanges).
   */
  pendingAmong(zoneID, page) {
    const pending = {};
    for (const recordName of [...page.changed.map((record) => record.recordName), ...page.deleted.map((tombstone) => tombstone.recordName)]) {
      const change = this.pendingRecords.get(this.recordKey(zoneID, recordName));
      if (change) pending[recordName] = change.kind;
    }
    return pending;
  }

  /** A fetched or saved record, named in the canonical zone. */
  canonicalRecord(record, zoneID) {
    if (record && typeof record === "object" && "zoneID" in record) record.zoneID = zoneID;
    return record;
  }

  // MARK: State

  /** The state to store (JSON-safe): tokens, the queue and the batch in flight. */
  get state() {
    return {
      version: 3,
      databaseToken: this.databaseToken,
      zoneTokens: Object.fromEntries(this.zoneTokens),
      zoneRanges: Object.fromEntries([...this.zoneRanges].map(([key, run]) =>
        [key, {zoneID: run.zoneID.toJSON(), position: run.position, ranges: [...run.ranges]}])),
      pendingZoneChanges: [...this.pendingZones.values()].map(({kind, zoneID}) => ({kind, zoneID: zoneID.toJSON()})),
      pendingRecordChanges: [...this.pendingRecords.values()].map(({kind, zoneID, recordName}) => ({kind, zoneID: zoneID.toJSON(), recordName})),
      inFlight: [...this.pendingRecords.entries()].filter(([key]) => this.inFlight.has(key))
        .map(([, {zoneID, recordName}]) => ({zoneID: zoneID.toJSON(), recordName})),
      savedUnfollowed: Object.fromEntries([...this.savedUnfollowed].map(([key, names]) => [key, {...names}])),
    };
  }

  /** The pending record changes: [{kind: "save" | "delete", zoneID, recordName}]. */
  get pendingRecordChanges() {
    return [...this.pendingRecords.values()].map(({kind, zoneID, recordName}) => ({kind, zoneID, recordName}));
  }

  queueRecord({kind, zoneID, recordName}) {
    if (kind !== "save" && kind !== "delete") throw new TypeError(`a pending record change is save or delete, not ${kind}`);
    if (typeof recordName !== "string" || recordName === "") throw new TypeError("a pending record change needs a recordName");
    const zone = this.canonicalZoneID(zoneID);
    const key = this.recordKey(zone, recordName);
    this.pendingRecords.delete(key);   // the latest goes last
    this.pendingRecords.set(key, {kind, zoneID: zone, recordName, sequence: ++this.sequence});
  }

  /**
   * Queues record changes: [{kind: "save" | "delete", zoneID, recordName}];
   * a later change of a record replaces an earlier one. Answers a promise
   * settled once the stateUpdate holding them was handled.
   */
  addPendingRecordChanges(changes) {
    for (const change of changes) this.queueRecord(change);
    this.changed();
    this.stateUpdate();
    return this.stateUpdates;   // never rejects: a delegate's failure to store reaches it as an error event
  }

  /** Queues zone changes: [{kind: "save" | "delete", zoneID}]; answers as addPendingRecordChanges. */
  addPendingZoneChanges(changes) {
    for (const change of changes) {
      if (change.kind !== "save" && change.kind !== "delete") throw new TypeError(`a pending zone change is save or delete, not ${change.kind}`);
      const zoneID = this.canonicalZoneID(change.zoneID);
      this.pendingZones.set(zoneID.key, {kind: change.kind, zoneID});
    }
    this.changed();
    this.stateUpdate();
    return this.stateUpdates;   // never rejects: a delegate's failure to store reaches it as an error event
  }

  get hasPendingChanges() {
    return this.pendingRecords.size > 0 || this.pendingZones.size > 0;
  }

  changed() {
    if (!this.hasPendingChanges) return;
    if (!this.automaticallySync || this.stopped || this.sendTimer) return;
    this.sendTimer = setTimeout(() => {
      this.sendTimer = null;
      this.automaticSend();
    }, 100);
  }

  async emit(event) {
    await this.delegate.handleEvent(event, this);
  }

  /**
   * Hands the delegate the state as it is when its turn comes: one at a
   * time, in order, so a slow store never writes an older state over a
   * newer one. A delegate's failure to store reaches it as an error event.
   */
  stateUpdate() {
    const update = this.stateUpdates.then(() => this.emit({type: "stateUpdate", state: this.state})).then(() => this.settleWaiters());
    this.stateUpdates = update.catch((error) => this.report(error));
    return update;
  }

  /**
   * Settles once every change queued now has been answered by the server:
   * saved or deleted, or refused (a refusal reaches the delegate as
   * always). A record edited again meanwhile is waited for until its
   * latest edit is answered. Waits through outages (automatic sync sends
   * when the server is back); rejects when `signal` aborts or the engine
   * stops first. Settled after the stateUpdate that says so was handled.
   */
  whenSent({signal} = {}) {
    const waiter = {records: new Set(this.pendingRecords.keys()), zones: new Set(this.pendingZones.keys())};
    if (this.allSent(waiter)) return Promise.resolve();
    if (this.stopped) return Promise.reject(new DOMException("whenSent: the sync engine is stopped; what waits is sent by the next one opened on the stored state", "AbortError"));
    return new Promise((resolve, reject) => {
      if (signal?.aborted) { reject(signal.reason); return; }
      const onAbort = () => { this.sentWaiters.delete(waiter); reject(signal.reason); };
      waiter.resolve = () => { signal?.removeEventListener("abort", onAbort); resolve(); };
      waiter.reject = (error) => { signal?.removeEventListener("abort", onAbort); reject(error); };
      signal?.addEventListener("abort", onAbort, {once: true});
      this.sentWaiters.add(waiter);
    });
  }

  allSent({records, zones}) {
    for (const key of records) if (this.pendingRecords.has(key)) return false;
    for (const key of zones) if (this.pendingZones.has(key)) return false;
    return true;
  }

  settleWaiters() {
    for (const waiter of [...this.sentWaiters]) {
      if (!this.allSent(waiter)) continue;
      this.sentWaiters.delete(waiter);
      waiter.resolve();
    }
  }

  /** Tells the delegate when the server's reachability changes. */
  setReachable(reachable) {
    if (this.serverReachable === reachable) return;
    this.serverReachable = reachable;
    Promise.resolve(this.emit({type: "serverReachabilityChanged", reachable})).catch((error) => this.report(error));
  }

  /**
   * Runs one fetch or send at a time. `retries` (a caller's: sync(), or
   * sendChanges/fetchChanges given it) caps this run's retries, and the
   * background's retries give way to it: the run before it stops pausing
   * and fails, so the caller hears from the server itself, at once.
   */
  exclusive(work, {retries} = {}) {
    const caller = retries !== undefined;
    if (caller) {
      this.callersWaiting += 1;
      for (const pause of this.pauses) pause.abort();
    }
    const start = () => {
      if (caller) this.callersWaiting -= 1;
      this.retryLimit = retries ?? this.maximumRetries;
      return work();
    };
    const run = this.running.then(start, start);
    this.running = run.catch(() => {});
    return run;
  }

  /**
   * Sends a request again after retryable errors, after Retry-After or a
   * pause growing from 0.5 to 5 s, up to the run's retries. A caller
   * waiting for its turn ends the pause (see exclusive).
   */
  async retrying(request, signal) {
    for (let attempt = 0; ; attempt++) {
      try {
        const answer = await request(attempt);
        this.setReachable(true);
        return answer;
      } catch (error) {
        if (error instanceof CanopyError && unreachable.has(error.code)) this.setReachable(false);
        else if (error instanceof CanopyError && error.status) this.setReachable(true);   // the server answered, with a refusal
        if (!(error instanceof CanopyError) || !error.isRetryable || attempt >= this.retryLimit || this.stopped) throw error;
        if (this.callersWaiting > 0) { this.yielded.add(error); throw error; }
        this.retries += 1;
        const pause = error.retryAfter !== undefined ? error.retryAfter * 1000 : Math.min(500 * 2 ** attempt, 5000);
        const interrupt = new AbortController();
        this.pauses.add(interrupt);
        try {
          await sleep(pause, signal, interrupt.signal);
        } catch (reason) {
          if (signal?.aborted || !interrupt.signal.aborted) throw reason;
          this.yielded.add(error);
          throw error;
        } finally {
          this.pauses.delete(interrupt);
        }
      }
    }
  }

  // MARK: Fetching

  /**
   * Fetches what changed since the stored tokens: the database feed, then
   * each changed zone's feed page by page (or, in the public database, its
   * one zone). Restarted from a stored state it fetches only what changed.
   */
  fetchChanges({signal, retries} = {}) {
    return this.exclusive(() => this.fetchNow(signal), {retries});
  }

  async fetchNow(signal) {
    await this.emit({type: "willFetchChanges"});
    if (this.database.scope === "PUBLIC") {
      await this.fetchZone(ZoneID.default, signal);
    } else {
      let token = this.databaseToken;
      // From nothing, the feed lists the zones that exist and no deletion.
      let fromNothing = token === null;
      const changed = new Map();
      for (;;) {
        let page;
        try {
          page = await this.retrying(() => this.database.databaseChanges({since: token, signal}), signal);
        } catch (error) {
          if (error?.code !== ErrorCode.CHANGE_TOKEN_EXPIRED || token === null) throw error;
          await this.emit({type: "changeTokenExpired", zoneID: null});
          token = null;
          fromNothing = true;
          this.databaseToken = null;
          this.zoneTokens.clear();
          this.zoneRanges.clear();
          this.savedUnfollowed.clear();
          changed.clear();
          continue;
        }
        // Canonical, keeping what the feed says of each zone (its share).
        const changedZones = page.changedZones.map((zone) => "share" in zone ? Object.assign(this.canonicalZoneID(zone), {share: zone.share}) : this.canonicalZoneID(zone));
        const deletedZones = page.deletedZones.map((zone) => this.canonicalZoneID(zone));
        // Deletions first: a zone deleted and made again under its name is in
        // both lists, and the new one is fetched from the start.
        for (const zone of deletedZones) { changed.delete(zone.key); this.forgetZone(zone.key); }
        for (const zone of changedZones) changed.set(zone.key, zone);
        await this.emit({type: "fetchedDatabaseChanges", changedZones, deletedZones});
        token = page.token;
        if (!page.moreComing) break;
      }
      // A first sync a crash or an error interrupted carries on, listed again or not.
      for (const [key, run] of this.zoneRanges) if (!changed.has(key)) changed.set(key, run.zoneID);
      // A zone followed but not listed from nothing is gone (deleted while
      // the database token was still null), and so is a zone saved into but
      // never followed that no feed lists: its fetch says so.
      const unlisted = [...(fromNothing ? this.zoneTokens.keys() : []), ...this.savedUnfollowed.keys()];
      for (const key of unlisted) if (!changed.has(key)) changed.set(key, this.zoneIDFromKey(key));
      for (const zone of changed.values()) await this.fetchZone(zone, signal);
      // Stored only after every changed zone was fetched: a crash before this fetches them again.
      this.databaseToken = token;
      await this.stateUpdate();
    }
    await this.emit({type: "didFetchChanges"});
  }

  async fetchZone(zone, signal) {
    const zoneID = this.canonicalZoneID(zone);
    let token = this.zoneTokens.get(zoneID.key) ?? null;
    if (token === null && (this.firstSyncRanges > 1 || this.zoneRanges.has(zoneID.key))) {
      if (!await this.fetchZoneInRanges(zoneID, signal)) return;
      token = this.zoneTokens.get(zoneID.key) ?? null;
    }
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
          this.forgetZone(zoneID.key);
          next = request(token);
          continue;
        }
        if (error?.code === ErrorCode.ZONE_NOT_FOUND) {   // deleted or no longer shared since the database feed said otherwise
          this.forgetZone(zoneID.key);
          await this.emit({type: "fetchedDatabaseChanges", changedZones: [], deletedZones: [zoneID]});
          return;
        }
        throw error;
      }
      // The next page is asked for before this one is handed over, so the
      // app's work (storing the records) overlaps the server's.
      if (page.moreComing) next = request(page.token);
      await this.emit({type: "fetchedRecordZoneChanges", zoneID, changed: page.changed.map((record) => this.canonicalRecord(record, zoneID)),
        deleted: page.deleted, pending: this.pendingAmong(zoneID, page)});
      this.delivered(zoneID, page);
      token = page.token;
      this.zoneTokens.set(zoneID.key, token);
      await this.stateUpdate();
      if (!page.moreComing) break;
    }
    // Saved here before the engine followed the zone, and not in it now:
    // they went with a life of the zone this fetch never saw.
    const saved = this.savedUnfollowed.get(zoneID.key);
    if (!saved) return;
    const gone = Object.entries(saved).map(([recordName, recordType]) => ({recordName, recordType}));
    if (gone.length > 0) {
      const page = {changed: [], deleted: gone};
      await this.emit({type: "fetchedRecordZoneChanges", zoneID, changed: [], deleted: gone, pending: this.pendingAmong(zoneID, page)});
    }
    this.savedUnfollowed.delete(zoneID.key);
    await this.stateUpdate();
  }

  /**
   * A first sync in ranges (docs/CHANGE_FEEDS.md "A first sync in
   * ranges"): the zone's position and ranges, each range read to its end
   * with up to firstSyncRanges in flight, then the position stored as the
   * zone's token, from which fetchZone follows the feed. Every page is
   * handed over before its range's token moves, so a stored state resumes
   * only what was not applied. False when the zone is gone.
   */
  async fetchZoneInRanges(zoneID, signal) {
    const key = zoneID.key;
    for (let expired = 0; ; expired++) {
      try {
        let run = this.zoneRanges.get(key);
        if (!run) {
          const cut = await this.retrying(() => this.database.zoneRanges(zoneID, {count: Math.min(Math.max(this.firstSyncRanges, 1), 64), signal}), signal);
          run = {zoneID, position: cut.position, ranges: cut.ranges};
          this.zoneRanges.set(key, run);
          await this.stateUpdate();
        }
        await this.readRanges(zoneID, run, signal);
        this.zoneRanges.delete(key);
        this.zoneTokens.set(key, run.position);
        await this.stateUpdate();
        return true;
      } catch (error) {
        if (error?.code === ErrorCode.CHANGE_TOKEN_EXPIRED && expired < 3) {
          this.zoneRanges.delete(key);
          this.savedUnfollowed.delete(key);
          await this.emit({type: "changeTokenExpired", zoneID});
          continue;
        }
        if (error?.code === ErrorCode.ZONE_NOT_FOUND) {
          this.forgetZone(key);
          await this.emit({type: "fetchedDatabaseChanges", changedZones: [], deletedZones: [zoneID]});
          return false;
        }
        throw error;
      }
    }
  }

  /**
   * Reads a run's unfinished ranges, at most firstSyncRanges at once, each
   * asking for its next page before its current one is handed over. Pages
   * reach the delegate one at a time; after the first failure none does,
   * and the others' requests are cancelled before this throws it.
   */
  async readRanges(zoneID, run, signal) {
    const controller = new AbortController();
    const cancel = () => controller.abort(signal.reason);
    if (signal?.aborted) cancel();
    signal?.addEventListener("abort", cancel, {once: true});
    const inner = controller.signal;
    const request = (since) => {
      const page = this.retrying(() => this.database.zoneChanges(zoneID, {since, limit: this.pageSize, signal: inner}), inner);
      page.catch(() => {});
      return page;
    };
    let failure = null;
    let handing = Promise.resolve();
    const handOver = (page, index) => {
      const done = handing.then(async () => {
        if (failure) return;
        await this.emit({type: "fetchedRecordZoneChanges", zoneID, changed: page.changed.map((record) => this.canonicalRecord(record, zoneID)),
          deleted: page.deleted, pending: this.pendingAmong(zoneID, page)});
        this.delivered(zoneID, page);
        run.ranges[index] = page.moreComing ? page.token : null;
        await this.stateUpdate();
      });
      handing = done.catch(() => {});
      return done;
    };
    const unfinished = run.ranges.flatMap((token, index) => token === null ? [] : [index]);
    let nextRange = 0;
    const worker = async () => {
      while (nextRange < unfinished.length && !failure) {
        const index = unfinished[nextRange++];
        let next = request(run.ranges[index]);
        for (;;) {
          const page = await next;
          if (failure) return;
          if (page.moreComing) next = request(page.token);
          await handOver(page, index);
          if (!page.moreComing) break;
        }
      }
    };
    const workers = Array.from({length: Math.min(Math.max(this.firstSyncRanges, 1), unfinished.length)}, () => worker().catch((error) => {
      if (!failure) { failure = error; controller.abort(error); }
    }));
    try {
      await Promise.all(workers);
      await handing;
    } finally {
      signal?.removeEventListener("abort", cancel);
    }
    if (failure) throw failure;
  }

  // MARK: Sending

  /**
   * Sends the pending changes: zones first, then records in batches of at
   * most 400 (halved after LIMIT_EXCEEDED), not atomic, each save checked
   * against its change tag. A refused save leaves the queue and comes to
   * the delegate in failedRecordSaves (on SERVER_RECORD_CHANGED, merge with
   * error.serverRecord and queue the save again).
   */
  sendChanges({signal, retries} = {}) {
    return this.exclusive(() => this.sendNow(signal), {retries});
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
      if (this.pendingRecords.size >= before && this.batchSize === size && batch.every((change) => this.pendingRecords.has(this.recordKey(change.zoneID, change.recordName)))) break;
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
    if (saves.length === 0 && deletes.length === 0) {
      if (dropped.length > 0) await this.stateUpdate();
      return;
    }
    // Sent before without an answer (a failed send, or a restart mid-send): the server may have it.
    const sentBefore = new Set([...saves.map((save) => save.change), ...deletes]
      .map((change) => this.recordKey(change.zoneID, change.recordName)).filter((key) => this.inFlight.has(key)));
    for (const change of [...saves.map((save) => save.change), ...deletes]) this.inFlight.add(this.recordKey(change.zoneID, change.recordName));
    await this.stateUpdate();   // the batch in flight is in the stored state before it leaves
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
      const mayHaveCommitted = resent || sentBefore.has(this.recordKey(save.change.zoneID, save.change.recordName));
      if (mayHaveCommitted && error.code === ErrorCode.SERVER_RECORD_CHANGED && error.serverRecord && sameFields(save.input.fields, error.serverRecord)) {
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
    if (this.database.scope !== "PUBLIC" && !this.zoneTokens.has(zoneID.key) && !this.zoneRanges.has(zoneID.key) && savedRecords.length > 0) {
      // Saved into a zone not yet followed: watched until its first fetch
      // (savedUnfollowed). Not in the public database: its one zone is never
      // deleted, and its feed leaves out records a role may create but not
      // read, which would then be reported deleted.
      const saved = this.savedUnfollowed.get(zoneID.key) ?? {};
      for (const record of savedRecords) saved[record.recordName] = record.recordType;
      this.savedUnfollowed.set(zoneID.key, saved);
    }
    // Records changed again while this batch was out: their newer change still waits.
    const pending = this.pendingAmong(zoneID, {changed: savedRecords, deleted: deletedRecordNames.map((recordName) => ({recordName}))});
    await this.emit({type: "sentRecordZoneChanges", zoneID, savedRecords: savedRecords.map((record) => this.canonicalRecord(record, zoneID)),
      deletedRecordNames, failedRecordSaves, failedRecordDeletes, pending});
    await this.stateUpdate();
  }

  /**
   * The server answered for this change: it is no longer in flight, and it
   * leaves the queue unless the record was changed again while it was out.
   */
  settle(change) {
    const key = this.recordKey(change.zoneID, change.recordName);
    this.inFlight.delete(key);
    if (this.pendingRecords.get(key)?.sequence === change.sequence) this.pendingRecords.delete(key);
  }

  // MARK: Automatic sync

  /** Sends what waits (automatic sync); a failure is reported and tried again after resumeDelay. */
  automaticSend() {
    if (this.stopped) return Promise.resolve();
    return this.sendChanges().then(() => {
      this.failures = 0;
    }, async (error) => {
      this.report(error);
      await this.stateUpdate().catch(() => {});   // what is still in flight, as it now stands
      this.scheduleResume();
    });
  }

  /**
   * After a failure: fetch and send again after a pause (resumeDelay),
   * over and over for as long as the server stays away.
   */
  scheduleResume() {
    if (!this.automaticallySync || this.stopped || this.resumeTimer) return;
    const delay = resumeDelay(this.failures++);
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = null;
      this.syncNow();
    }, delay);
  }

  /** A cue that the server may be back (online, page shown, live connection open): fetch and send now. */
  syncNow() {
    if (this.stopped) return;
    if (this.resumeTimer) { clearTimeout(this.resumeTimer); this.resumeTimer = null; }
    this.cueFetch?.();
    if (this.hasPendingChanges) this.automaticSend();
  }

  /**
   * Listens for what says the server may be reachable again: the
   * browser's `online` event, the page becoming visible, and the live
   * connection opening.
   */
  watchSurroundings() {
    const onOnline = () => { this.failures = 0; this.syncNow(); };
    const onVisible = () => { if (globalThis.document?.visibilityState !== "hidden") this.syncNow(); };
    globalThis.addEventListener?.("online", onOnline);
    globalThis.document?.addEventListener?.("visibilitychange", onVisible);
    let away = null;
    const removeLive = this.database.container?.live?.onConnectionChange?.((connected) => {
      if (connected) {
        if (away) { clearTimeout(away); away = null; }
        this.setReachable(true);
        this.failures = 0;
        this.syncNow();
      } else if (!away) {
        // A socket that drops and opens again at once is not the server going away.
        away = setTimeout(() => { away = null; if (!this.database.container.live.connected && !this.stopped) this.setReachable(false); }, 2000);
      }
    });
    this.unwatch = () => {
      globalThis.removeEventListener?.("online", onOnline);
      globalThis.document?.removeEventListener?.("visibilitychange", onVisible);
      removeLive?.();
      if (away) clearTimeout(away);
    };
  }

  async listen() {
    const controller = new AbortController();
    this.listening = controller;
    let fetching = null, again = false;
    const cue = () => {
      if (this.stopped) return;
      if (fetching) { again = true; return; }
      fetching = this.fetchChanges({signal: controller.signal}).then(() => {
        if (!this.hasPendingChanges) this.failures = 0;
      }, (error) => {
        this.report(error);
        this.scheduleResume();
      }).finally(() => {
        fetching = null;
        if (again && !this.stopped) { again = false; cue(); }
      });
    };
    this.cueFetch = cue;
    cue();
    if (this.database.scope === "PUBLIC") return;
    // The feed's subscription: it ends only when stopped or refused (the
    // connection itself reopens by itself); a refusal is tried again later.
    while (!this.stopped) {
      try {
        for await (const _ of this.database.watchDatabase({since: this.databaseToken, signal: controller.signal})) cue();
        if (this.stopped) return;
      } catch (error) {
        if (this.stopped) return;
        this.report(error);
        // No WebSocket here: told once; fetching and sending go on over HTTP, cued as before.
        if (error?.code === ErrorCode.CONFIGURATION_ERROR) return;
      }
      // At most the live connection's own longest pause between reconnections
      // (10 s): a feed refused while the server starts again must not hold
      // the send back for a minute; what waits is sent within it.
      const longest = this.database.container.live.maximumDelay;
      await sleep(Math.min(resumeDelay(this.failures), longest), controller.signal).catch(() => {});
    }
  }

  report(error) {
    if (this.stopped && error?.name === "AbortError") return;
    if (error && typeof error === "object" && this.yielded.has(error)) return;
    try {
      Promise.resolve(this.delegate.handleEvent({type: "error", error}, this)).catch(() => {});
    } catch { /* the delegate's own failure to handle a failure */ }
  }

  /** Stops listening and the delayed send; waits for the work in progress. */
  async stop() {
    this.stopped = true;
    for (const pause of this.pauses) pause.abort();   // a retry's pause ends now, not after its seconds
    if (this.sendTimer) { clearTimeout(this.sendTimer); this.sendTimer = null; }
    if (this.resumeTimer) { clearTimeout(this.resumeTimer); this.resumeTimer = null; }
    this.unwatch?.();
    this.listening?.abort();
    await this.running;
    await this.stateUpdates;
    for (const waiter of [...this.sentWaiters]) {
      this.sentWaiters.delete(waiter);
      waiter.reject(new DOMException("whenSent: the sync engine stopped before everything queued was sent; it is sent by the next one opened on the stored state", "AbortError"));
    }
  }
}

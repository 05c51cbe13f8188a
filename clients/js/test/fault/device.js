// One device of a fault run, in a process of its own so the run can kill
// it: an app with a local copy of one zone and a SyncEngine syncing
// automatically, storing its copy and the engine's state together in one
// file (written whole and renamed) at every stateUpdate, as an app that
// keeps both in IndexedDB in one transaction would. It edits when the run
// says so and answers "queued" only once the engine's stateUpdate holding
// the edit is stored. Conflicts merge as an app's should: the server's
// record with this device's own field on top; an edit of a record another
// device deleted (with its zone) wins, and saves it again as new; other
// refusals show the server's copy again (refetch).
//
// argv: a JSON {name, baseURL, scope, zone: {zoneName, ownerName}, file, field}.

import {existsSync, readFileSync, renameSync, writeFileSync} from "node:fs";
import {CanopyRecord, Container, ErrorCode, SyncEngine} from "../../index.js";

const options = JSON.parse(process.argv[2]);
const send = (message) => { try { process.send?.(message); } catch { /* the run is gone */ } };

// The token comes from the run; after a refusal it asks for a new one.
let token = options.token;
const waitingTokens = [];
process.on("message", (message) => {
  if (message.type === "token") { token = message.token; waitingTokens.splice(0).forEach((resolve) => resolve()); }
});
async function tokenProvider({refresh}) {
  if (refresh) {
    const asked = new Promise((resolve) => waitingTokens.push(resolve));
    send({type: "needToken"});
    await asked;
  }
  return token;
}

const stored = existsSync(options.file) ? JSON.parse(readFileSync(options.file, "utf8")) : {zones: {}, state: null};
/** The local copy as the README's app keeps it: zone key → recordName → CanopyRecord. */
const zones = new Map(Object.entries(stored.zones).map(([key, records]) =>
  [key, new Map(Object.entries(records).map(([name, json]) => [name, CanopyRecord.fromJSON(json)]))]));
/** The records of a zone, keyed as the engine names it. */
const recordsOf = (zoneID) => {
  const key = engine.canonicalZoneID(zoneID).key;
  if (!zones.has(key)) zones.set(key, new Map());
  return zones.get(key);
};
let dieWhenInFlight = false, dieOnAnswer = false;
/** Die at the k-th state stored while a first sync in ranges is under way (options.dieMidRange). */
let midRangeStates = 0;

/** The server's record with this device's own field from `mine` on top: how every merge here is made. */
function underOwnField(server, mine) {
  const own = mine?.fields?.[options.field];
  return new CanopyRecord({...server, fields: {...server.fields, ...(own === undefined ? {} : {[options.field]: own})}});
}

/**
 * Records refused and not yet read again, kept in the stored file: a device
 * killed before the server answered reads them again when it starts, or
 * its copy would keep a record the server does not have (the fault run
 * found that).
 */
const toRefetch = new Set(stored.refetch ?? []);

/**
 * After a refusal (the record gone with a deleted zone, the zone no longer
 * shared): the server's copy of the record, or none, in the local copy, as
 * an app shows what is really there. Tried until the server answers.
 */
async function refetch(zoneID, recordName) {
  if (!toRefetch.has(recordName)) {
    toRefetch.add(recordName);
    persist(engine.state);
  }
  for (let attempt = 0; ; attempt++) {
    let gone = false, record = null;
    try {
      const [result] = await database.lookup(zoneID, [recordName]);
      record = result.record;
      gone = !record;
    } catch (error) {
      if (error?.code !== ErrorCode.ZONE_NOT_FOUND && error?.code !== ErrorCode.PERMISSION_FAILURE) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      gone = true;
    }
    const key = engine.canonicalZoneID(zoneID).key;
    toRefetch.delete(recordName);
    // A newer change waiting wins over what the server has.
    if (!engine.pendingRecordChanges.some((change) => change.zoneID.key === key && change.recordName === recordName)) {
      if (gone) recordsOf(zoneID).delete(recordName); else recordsOf(zoneID).set(recordName, record);
    }
    persist(engine.state);
    return;
  }
}

function persist(state) {
  const temporary = `${options.file}.tmp`;
  writeFileSync(temporary, JSON.stringify({state, refetch: [...toRefetch], zones: Object.fromEntries([...zones].map(([key, records]) =>
    [key, Object.fromEntries([...records].map(([name, record]) => [name, record.toJSON()]))]))}));
  renameSync(temporary, options.file);
}

const delegate = {
  recordToSave(zoneID, recordName) {
    return recordsOf(zoneID).get(recordName) ?? null;
  },
  async handleEvent(event, engine) {
    switch (event.type) {
    case "stateUpdate":
      persist(event.state);
      send({type: "status", pending: engine.pendingRecordChanges.length, reachable: engine.serverReachable});
      if (options.dieMidRange && Object.keys(event.state.zoneRanges ?? {}).length && ++midRangeStates === options.dieMidRange) {
        // Stored; dies before the next page is handed over (a moment for the run to hear of it).
        send({type: "dyingMidRange"});
        setTimeout(() => process.kill(process.pid, "SIGKILL"), 5);
      }
      if (dieWhenInFlight && event.state.inFlight?.length) {
        // Mid-send: the request leaves after this; die while it is out.
        setTimeout(() => process.kill(process.pid, "SIGKILL"), Math.floor(Math.random() * 30));
      }
      break;
    case "fetchedRecordZoneChanges": {
      const records = recordsOf(event.zoneID);
      for (const record of event.changed) {
        const waiting = event.pending[record.recordName];
        if (waiting === "delete") continue;   // deleted here, not yet sent
        if (waiting === "save") {
          // An edit not yet sent: the fetched version under it (its tag, others' fields), this device's field on top.
          records.set(record.recordName, underOwnField(record, records.get(record.recordName)));
          continue;
        }
        records.set(record.recordName, record);
      }
      for (const tombstone of event.deleted) if (event.pending[tombstone.recordName] !== "save") records.delete(tombstone.recordName);
      break;
    }
    case "fetchedDatabaseChanges":
      for (const zone of event.deletedZones) zones.delete(engine.canonicalZoneID(zone).key);
      break;
    case "changeTokenExpired": {
      // Fetched again from nothing; what waits to be sent is kept.
      const waiting = new Set(engine.pendingRecordChanges.map((change) => `${change.zoneID.key}/${change.recordName}`));
      for (const [key, records] of zones) {
        if (event.zoneID && key !== engine.canonicalZoneID(event.zoneID).key) continue;
        for (const name of [...records.keys()]) if (!waiting.has(`${key}/${name}`)) records.delete(name);
      }
      break;
    }
    case "sentRecordZoneChanges": {
      if (dieOnAnswer) process.kill(process.pid, "SIGKILL");   // the answer came; the process dies before handling it
      const records = recordsOf(event.zoneID);
      for (const record of event.savedRecords) {
        if (event.pending[record.recordName] === "delete") continue;
        if (event.pending[record.recordName] === "save") {
          // Edited again while this was out: the saved tag, the newer own field.
          records.set(record.recordName, underOwnField(record, records.get(record.recordName)));
          continue;
        }
        records.set(record.recordName, record);
      }
      for (const failure of event.failedRecordSaves) {
        if (failure.error.code === ErrorCode.SERVER_RECORD_CHANGED && failure.error.serverRecord) {
          const mine = records.get(failure.recordName);
          const server = failure.error.serverRecord;
          records.set(failure.recordName, underOwnField(server, mine));
          engine.addPendingRecordChanges([{kind: "save", zoneID: event.zoneID, recordName: failure.recordName}]);
        } else if (failure.error.code === ErrorCode.UNKNOWN_ITEM && records.get(failure.recordName)) {
          // Edited here while another device deleted it (with its zone):
          // the edit wins, and the record comes back as new.
          records.set(failure.recordName, new CanopyRecord({...records.get(failure.recordName), recordChangeTag: null}));
          engine.addPendingRecordChanges([{kind: "save", zoneID: event.zoneID, recordName: failure.recordName}]);
          send({type: "failure", what: `save ${failure.recordName} (saved again as new)`, code: failure.error.code, message: failure.error.message});
        } else {
          send({type: "failure", what: `save ${failure.recordName}`, code: failure.error.code, message: failure.error.message});
          refetch(event.zoneID, failure.recordName);
        }
      }
      for (const failure of event.failedRecordDeletes) {
        send({type: "failure", what: `delete ${failure.recordName}`, code: failure.error.code, message: failure.error.message});
        refetch(event.zoneID, failure.recordName);
      }
      break;
    }
    case "serverReachabilityChanged":
      send({type: "status", pending: engine.pendingRecordChanges.length, reachable: event.reachable});
      break;
    case "error":
      send({type: "engineError", code: event.error?.code, message: String(event.error?.message ?? event.error).slice(0, 300)});
      break;
    }
  },
};

// Requests still out, for the report of a device that does not settle.
const outstanding = new Map();
let requestNumber = 0;
const countingFetch = async (url, init) => {
  const number = ++requestNumber;
  outstanding.set(number, {at: Date.now(), what: String(init?.body ?? "").slice(0, 60)});
  try { return await fetch(url, init); } finally { outstanding.delete(number); }
};
// A request that goes unanswered fails after 15 s (60 by default) and is tried again: the run heals sooner.
const container = new Container({baseURL: options.baseURL, tokenProvider, fetch: countingFetch, requestTimeout: 15_000});
const database = options.scope === "SHARED" ? container.sharedDatabase : container.privateDatabase;
// Small pages, four ranges: a first sync of the run's zone is many pages, read in ranges.
const engine = new SyncEngine({database, state: stored.state, delegate, automaticallySync: true, maximumRetries: 2, pageSize: 50, firstSyncRanges: 4});
const zone = engine.canonicalZoneID(options.zone);
for (const recordName of toRefetch) refetch(zone, recordName);

process.on("message", async (message) => {
  switch (message.type) {
  case "edit": {
    const records = recordsOf(zone);
    const existing = records.get(message.recordName);
    const fields = {...(existing?.fields ?? {}), [options.field]: message.value};
    records.set(message.recordName, existing
      ? new CanopyRecord({...existing, fields})
      : new CanopyRecord({recordName: message.recordName, recordType: "Item", fields, zoneID: zone}));
    await engine.addPendingRecordChanges([{kind: "save", zoneID: zone, recordName: message.recordName}]);
    send({type: "queued", id: message.id});
    break;
  }
  case "delete":
    recordsOf(zone).delete(message.recordName);
    await engine.addPendingRecordChanges([{kind: "delete", zoneID: zone, recordName: message.recordName}]);
    send({type: "queued", id: message.id});
    break;
  case "status":
    send({type: "statusAnswer", id: message.id, pending: engine.hasPendingChanges, reachable: engine.serverReachable});
    break;
  case "dieWhenInFlight": dieWhenInFlight = true; break;
  case "dieOnAnswer": dieOnAnswer = true; break;
  case "settle":
    // Heal: fetch, and send what waits, until nothing waits.
    try {
      const stuck = setTimeout(() => send({type: "stuck", pending: engine.pendingRecordChanges.length, reachable: engine.serverReachable,
        retries: engine.retries, live: container.live.connected, waitingForToken: waitingTokens.length,
        outstanding: [...outstanding.values()].map(({at, what}) => `${Date.now() - at} ms: ${what}`)}), 45_000);
      await engine.fetchChanges();
      if (engine.hasPendingChanges) await engine.sendChanges();
      await engine.fetchChanges();
      clearTimeout(stuck);
      send({type: "settled", id: message.id, pending: engine.pendingRecordChanges.length,
        hasPending: engine.hasPendingChanges,
        records: Object.fromEntries([...recordsOf(zone)].map(([name, record]) => [name, record.fields]))});
    } catch (error) {
      send({type: "settled", id: message.id, error: `${error?.code ?? ""} ${error?.message ?? error}`, hasPending: true});
    }
    break;
  case "stop":
    await engine.stop();
    container.close();
    process.exit(0);
  }
});

send({type: "ready"});

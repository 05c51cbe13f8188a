// One device of a fault run, in a process of its own so the run can kill
// it: an app keeping one zone in a SyncedDatabase stored by FileStorage
// (the copy, the edits waiting and the engine's state in one file, written
// whole and renamed) and syncing automatically, as a Node app would with
// CanopyJS's adapter. It edits its own field when the run says so and
// answers "queued" only once SyncedDatabase.save settled (the edit and the
// queue stored). Conflicts merge as the SyncedDatabase merges them: the
// server's record with the fields edited here on top; an edit of a record
// another device deleted wins, and saves it again as new; other refusals
// show the server's copy again.
//
// argv: a JSON {name, baseURL, scope, zone: {zoneName, ownerName}, file, field}.

import {Container, ErrorCode, SyncedDatabase} from "../../index.js";
import {FileStorage} from "../../file-storage.js";

const options = JSON.parse(process.argv[2]);
// `then` runs once the message has left (Node's IPC writes asynchronously:
// a process killed at once may take its last message with it).
const send = (message, then) => {
  try { process.send?.(message, then ? () => then() : undefined); } catch { then?.(); /* the run is gone */ }
};

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

let dieWhenInFlight = false, dieOnAnswer = false;
/** Die at the k-th state stored while a first sync in ranges is under way (options.dieMidRange). */
let midRangeStates = 0;

/** The run's kills, at the moments it names, each after the SyncedDatabase stored what the event changed. */
async function onEvent(event, engine) {
  switch (event.type) {
  case "stateUpdate":
    send({type: "status", pending: engine.pendingRecordChanges.length, reachable: engine.serverReachable});
    if (options.dieMidRange && Object.keys(event.state.zoneRanges ?? {}).length && ++midRangeStates === options.dieMidRange) {
      // Stored; dies before the next page is handed over, once the run has
      // been told (killed 5 ms after send, the message was lost under load:
      // a run then counted no first sync interrupted).
      send({type: "dyingMidRange"}, () => process.kill(process.pid, "SIGKILL"));
    }
    if (dieWhenInFlight && event.state.inFlight?.length) {
      // Mid-send: the request leaves after this; die while it is out.
      setTimeout(() => process.kill(process.pid, "SIGKILL"), Math.floor(Math.random() * 30));
    }
    break;
  case "sentRecordZoneChanges":
    for (const failure of event.failedRecordSaves) {
      // A conflict is merged and sent again; anything else the run must hear of.
      if (failure.error.code === ErrorCode.SERVER_RECORD_CHANGED && failure.error.serverRecord) continue;
      send({type: "failure", what: `save ${failure.recordName}`, code: failure.error.code, message: failure.error.message});
    }
    for (const failure of event.failedRecordDeletes) {
      send({type: "failure", what: `delete ${failure.recordName}`, code: failure.error.code, message: failure.error.message});
    }
    break;
  case "serverReachabilityChanged":
    send({type: "status", pending: engine.pendingRecordChanges.length, reachable: event.reachable});
    break;
  case "error":
    send({type: "engineError", code: event.error?.code, message: String(event.error?.message ?? event.error).slice(0, 300)});
    break;
  }
}

// Requests still out, for the report of a device that does not settle.
const outstanding = new Map();
let requestNumber = 0;
const countingFetch = async (url, init) => {
  const number = ++requestNumber;
  outstanding.set(number, {at: Date.now(), what: String(init?.body ?? "").slice(0, 60)});
  try {
    const response = await fetch(url, init);
    // The answer of a batch came; the process dies before handling it.
    if (dieOnAnswer && String(init?.body ?? "").includes("modifyRecords")) process.kill(process.pid, "SIGKILL");
    return response;
  } finally {
    outstanding.delete(number);
  }
};
// A request that goes unanswered fails after 15 s (60 by default) and is tried again: the run heals sooner.
const container = new Container({baseURL: options.baseURL, tokenProvider, fetch: countingFetch, requestTimeout: 15_000});
const database = options.scope === "SHARED" ? container.sharedDatabase : container.privateDatabase;
// Small pages, four ranges: a first sync of the run's zone is many pages, read in ranges.
const synced = await SyncedDatabase.open({database, storage: new FileStorage(options.file), onEvent, onError: () => {},
  maximumRetries: 2, pageSize: 50, firstSyncRanges: 4});
const engine = synced.engine;
const zone = engine.canonicalZoneID(options.zone);

process.on("message", async (message) => {
  switch (message.type) {
  case "edit":
    await synced.save(zone, {recordName: message.recordName, recordType: "Item", fields: {[options.field]: message.value}});
    send({type: "queued", id: message.id});
    break;
  case "delete":
    await synced.delete(zone, message.recordName);
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
        records: Object.fromEntries(synced.records(zone).map((record) => [record.recordName, record.fields]))});
    } catch (error) {
      send({type: "settled", id: message.id, error: `${error?.code ?? ""} ${error?.message ?? error}`, hasPending: true});
    }
    break;
  case "stop":
    await synced.close();
    container.close();
    process.exit(0);
  }
});

send({type: "ready"});

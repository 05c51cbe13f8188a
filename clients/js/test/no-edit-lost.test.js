// Issue 50's three ways an edit was lost, each as a person meets it, and
// the values that did not survive the trip: one zone under one key however
// the app names it; every change to what waits stored through stateUpdate,
// the batch in flight included; sending resumed by itself after an outage
// longer than the retries; a Date as a query argument; a whole number
// beyond 2^53 refused; a query's abort signal honoured.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {Container, Double, SyncEngine, ZoneID} from "../index.js";
import {resumeDelay} from "../sync-engine.js";
import {LiveServer, eventually, unique} from "./harness.js";
import {LocalApp} from "./local-app.js";

let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

describe("SyncEngine: no edit lost", () => {
  test("one zone, one key: a change queued as \"Sync\", {zoneName} or with the owner is one pending change, and events name the zone so", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Sync");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    const app = new LocalApp(db);
    await app.engine.fetchChanges();
    // The feed names the zone; the app queues it three ways.
    const forms = [zoneName, {zoneName}, new ZoneID(zoneName, alice.userRecordName)];
    for (const zone of forms) app.edit(zone, "note", "Note", {text: `via ${typeof zone}`});
    assert.equal(app.engine.pendingRecordChanges.length, 1, "three names of one zone are one pending change");
    assert.deepEqual(new Set(forms.map((zone) => app.engine.canonicalZoneID(zone).key)).size, 1);
    assert.equal(app.engine.pendingRecordChanges[0].zoneID.ownerName, null, "in the private database the zone is named without its owner");
    await app.engine.sendChanges();
    assert.equal(app.engine.pendingRecordChanges.length, 0);

    // Another device changes the note: the fetch lands under the same key, so the next local edit starts from it.
    await db.saveRecord(zoneName, {...(await db.fetchRecord(zoneName, "note")), fields: {text: "from the phone", extra: 1}});
    await app.engine.fetchChanges();
    assert.equal(app.records.size, 1, `one local copy of the zone, not two: ${[...app.records.keys()]}`);
    app.edit(new ZoneID(zoneName, alice.userRecordName), "note", "Note", {text: "edited after the fetch"});
    await app.engine.sendChanges();
    assert.deepEqual(app.conflicts, [], "the edit was made on the fetched version: no conflict");
    assert.deepEqual((await db.fetchRecord(zoneName, "note")).fields, {text: "edited after the fetch", extra: 1});
    alice.container.close();
  });

  test("every change to what waits is a stateUpdate; the stored state holds the queue and the batch in flight", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("State");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    const app = new LocalApp(db);
    await app.engine.addPendingRecordChanges([]);   // settles at once
    app.edit(zoneName, "a", "Note", {text: "typed offline"});
    await app.engine.stateUpdates;
    assert.deepEqual(app.savedState.pendingRecordChanges.map((change) => change.recordName), ["a"], "queued: stored without any send");

    // The state stored just before the batch leaves names it in flight.
    let inFlight = null;
    const handle = app.handleEvent.bind(app);
    app.handleEvent = async (event) => {
      await handle(event);
      if (event.type === "stateUpdate" && event.state.inFlight?.length && !inFlight) inFlight = JSON.parse(JSON.stringify(event.state));
    };
    await app.engine.sendChanges();
    assert.deepEqual(inFlight?.inFlight.map((change) => change.recordName), ["a"], "in flight before the request");
    assert.deepEqual(app.savedState.pendingRecordChanges, [], "confirmed: stored as sent");
    assert.deepEqual(app.savedState.inFlight, []);

    // The process dies after the commit, before the answer is handled: the
    // engine restarted from the in-flight state sends again and takes the
    // server's copy, its own write, as saved rather than as a conflict.
    const restarted = new LocalApp(db, {state: inFlight});
    restarted.records = new Map([[restarted.engine.canonicalZoneID(zoneName).key, new Map([["a", app.zone(zoneName).get("a")]])]]);
    restarted.zone(zoneName).set("a", {...restarted.zone(zoneName).get("a"), recordChangeTag: null});
    await restarted.engine.sendChanges();
    assert.deepEqual(restarted.conflicts, [], "its own write is not a conflict");
    assert.equal(restarted.engine.pendingRecordChanges.length, 0);
    assert.equal((await db.fetchRecord(zoneName, "a")).fields.text, "typed offline");
    alice.container.close();
  });

  test("a failed send is a stateUpdate, and an outage longer than every retry ends with the change sent, by itself", async () => {
    const own = await LiveServer.start();
    const alice = await own.user("alice");
    const zoneName = unique("Outage");
    await alice.container.privateDatabase.saveZone(zoneName);
    const container = new Container({baseURL: own.baseURL, token: alice.token});
    const reachability = [];
    const app = new LocalApp(container.privateDatabase, {automaticallySync: true, maximumRetries: 1});
    const handle = app.handleEvent.bind(app);
    app.handleEvent = async (event) => {
      if (event.type === "serverReachabilityChanged") reachability.push(event.reachable);
      await handle(event);
    };
    await eventually(() => app.engine.serverReachable === true, 30, "the engine to reach the server");
    await own.stop("SIGKILL");
    app.edit(zoneName, "late", "Note", {text: "written while the server was away"});
    // Its one retry is spent: the failure is reported, the state stored, and the engine says it waits.
    await eventually(() => app.events.includes("error"), 30, "the send to fail after its retries");
    await eventually(() => app.engine.serverReachable === false && reachability.includes(false), 30, "the engine to say the server is away");
    assert.deepEqual(app.savedState.pendingRecordChanges.map((change) => change.recordName), ["late"]);
    // Longer than the retries, and long enough that the live connection's pause between attempts has grown to its 10 s; nobody edits, nobody calls send.
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    await own.startProcess();
    const back = Date.now();
    // The bound the README states: the live connection's next attempt (at most 10 s away) cues the send; 25 s leaves room for a loaded machine.
    await eventually(async () => app.engine.pendingRecordChanges.length === 0, 25, "the waiting change to be sent within the live connection's pause after the server came back");
    console.log(`# sent ${Date.now() - back} ms after the server answered again`);
    assert.equal((await container.privateDatabase.fetchRecord(zoneName, "late")).fields.text, "written while the server was away");
    assert.equal(app.engine.serverReachable, true);
    assert.deepEqual(app.savedState.pendingRecordChanges, []);
    await app.engine.stop();
    container.close(); alice.container.close();
    await own.stop();
  });

  test("the pause before trying again doubles from 1 s to 60 s with jitter, and never stops", () => {
    assert.equal(resumeDelay(0, () => 0), 500);
    assert.equal(resumeDelay(0, () => 0.999999).toFixed(0), "1000");
    assert.equal(resumeDelay(3, () => 0), 4000);
    assert.equal(resumeDelay(60, () => 0), 30_000);
    assert.ok(resumeDelay(1000, () => 0.999999) <= 60_000);
  });
});

describe("values exact or refused", () => {
  test("a Date is a query argument, compared as a TIMESTAMP", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Dates");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await db.modify(zoneName, {save: [
      {recordName: "old", recordType: "Event", fields: {at: new Date("2020-01-01T00:00:00Z")}},
      {recordName: "new", recordType: "Event", fields: {at: new Date("2026-06-01T00:00:00Z")}},
    ]});
    const found = await db.query(zoneName, {recordType: "Event", filter: "at >= $from", args: {from: new Date("2025-01-01T00:00:00Z")}}).all();
    assert.deepEqual(found.map((record) => record.recordName), ["new"]);
    const listed = await db.query(zoneName, {recordType: "Event", filter: "at < %@", args: [new Date("2025-01-01T00:00:00Z")]}).all();
    assert.deepEqual(listed.map((record) => record.recordName), ["old"]);
    alice.container.close();
  });

  test("a whole Number beyond 2^53 is refused, pointing at BigInt and Double; BigInt and Double keep their values", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Numbers");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await assert.rejects(db.saveRecord(zoneName, {recordName: "n", recordType: "N", fields: {big: 2 ** 60}}),
      (error) => error instanceof TypeError && /field big/.test(error.message) && /BigInt/.test(error.message) && /Double/.test(error.message));
    assert.throws(() => db.query(zoneName, {recordType: "N", filter: "big == $b", args: {b: 2 ** 60}}), /args\.b.*BigInt/);
    await db.saveRecord(zoneName, {recordName: "n", recordType: "N", fields: {big: 2n ** 60n, real: new Double(2 ** 60), safe: 2 ** 53 - 1}});
    const read = await db.fetchRecord(zoneName, "n");
    assert.equal(read.fields.big, 1152921504606846976n);
    assert.equal(read.fields.real, 2 ** 60);
    assert.equal(read.fields.safe, 9007199254740991);
    alice.container.close();
  });

  test("query(...).all({signal}) and pages({signal}) stop when the signal aborts", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Abort");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await db.modify(zoneName, {save: Array.from({length: 30}, (_, i) => ({recordName: `r${i}`, recordType: "R", fields: {i}}))});
    const aborted = AbortSignal.abort();
    await assert.rejects(db.query(zoneName, {recordType: "R", pageSize: 10}).all({signal: aborted}), (error) => error?.name === "AbortError");
    // Aborted between pages: the second page is never asked for.
    const controller = new AbortController();
    const pages = [];
    await assert.rejects((async () => {
      for await (const page of db.query(zoneName, {recordType: "R", pageSize: 10}).pages({signal: controller.signal})) {
        pages.push(page);
        controller.abort();
      }
    })(), (error) => error?.name === "AbortError");
    assert.equal(pages.length, 1);
    assert.equal((await db.query(zoneName, {recordType: "R", pageSize: 10}).all()).length, 30, "without a signal it reads every page");
    alice.container.close();
  });
});

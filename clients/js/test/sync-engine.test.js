// The sync engine against live gateways: two engines converging on one
// shared zone with a conflict, a restart from stored state fetching only
// what changed, batches halved on LIMIT_EXCEEDED, change-token expiry,
// and retries through a gateway killed mid-batch.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {CanopyRecord, Container, ErrorCode, SyncEngine, ZoneID} from "../index.js";
import {LiveServer, eventually, unique} from "./harness.js";

/**
 * A tiny app: its local copy of records (by zone key, then name), its
 * stored engine state, and a delegate that merges conflicts by taking the
 * server's record and putting the local fields on top.
 */
class LocalApp {
  constructor(database, {state = null, automaticallySync = false} = {}) {
    this.records = new Map();
    this.changedKeys = new Map();   // recordName → the keys edited locally and not yet sent
    this.conflicts = [];
    this.events = [];
    this.fetchedRecords = 0;
    this.savedState = state;
    this.engine = new SyncEngine({database, state, automaticallySync, delegate: this});
  }

  zone(zoneID) {
    const key = ZoneID.from(zoneID).key;
    if (!this.records.has(key)) this.records.set(key, new Map());
    return this.records.get(key);
  }

  /** Edits a record locally and queues it. */
  edit(zoneID, recordName, recordType, fields) {
    const existing = this.zone(zoneID).get(recordName);
    const record = existing ? new CanopyRecord({...existing, fields: {...existing.fields, ...fields}}) : new CanopyRecord({recordName, recordType, fields});
    this.zone(zoneID).set(recordName, record);
    this.changedKeys.set(recordName, new Set([...(this.changedKeys.get(recordName) ?? []), ...Object.keys(fields)]));
    this.engine.addPendingRecordChanges([{kind: "save", zoneID, recordName}]);
  }

  recordToSave(zoneID, recordName) {
    return this.zone(zoneID).get(recordName) ?? null;
  }

  async handleEvent(event) {
    this.events.push(event.type);
    switch (event.type) {
    case "stateUpdate": this.savedState = JSON.parse(JSON.stringify(event.state)); break;
    case "fetchedRecordZoneChanges":
      for (const record of event.changed) this.zone(event.zoneID).set(record.recordName, record);
      for (const tombstone of event.deleted) this.zone(event.zoneID).delete(tombstone.recordName);
      this.fetchedRecords += event.changed.length;
      break;
    case "fetchedDatabaseChanges":
      for (const zone of event.deletedZones) this.records.delete(zone.key);
      break;
    case "changeTokenExpired":
      if (event.zoneID) this.records.delete(event.zoneID.key); else this.records.clear();
      break;
    case "sentRecordZoneChanges":
      for (const record of event.savedRecords) { this.zone(event.zoneID).set(record.recordName, record); this.changedKeys.delete(record.recordName); }
      for (const failure of event.failedRecordSaves) {
        if (failure.error.code !== ErrorCode.SERVER_RECORD_CHANGED) throw failure.error;
        this.conflicts.push(failure.recordName);
        const mine = this.zone(event.zoneID).get(failure.recordName);
        const server = failure.error.serverRecord;
        const edited = Object.fromEntries([...this.changedKeys.get(failure.recordName) ?? []].map((key) => [key, mine.fields[key]]));
        this.zone(event.zoneID).set(failure.recordName, new CanopyRecord({...server, fields: {...server.fields, ...edited}}));
        this.engine.addPendingRecordChanges([{kind: "save", zoneID: event.zoneID, recordName: failure.recordName}]);
      }
      break;
    }
  }

  fields(zoneID) {
    return Object.fromEntries([...this.zone(zoneID).entries()].map(([name, record]) => [name, record.fields]).sort(([a], [b]) => a < b ? -1 : 1));
  }
}

let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

describe("SyncEngine", () => {
  test("two engines on one shared zone converge after concurrent edits; the conflict is handed over once and merged", async () => {
    const bobEmail = `${unique("bob")}@example.com`;
    const alice = await server.user("alice"), bob = await server.user("bob", {email: bobEmail});
    const zoneName = unique("Together");
    await alice.container.privateDatabase.saveZone(zoneName);
    const share = await alice.container.privateDatabase.saveShare(zoneName, {participants: [{email: bobEmail, permission: "READ_WRITE"}]});
    await bob.container.acceptShare(share.url);
    const aliceZone = new ZoneID(zoneName, alice.userRecordName);
    const aliceApp = new LocalApp(alice.container.privateDatabase);
    const bobApp = new LocalApp(bob.container.sharedDatabase);

    aliceApp.edit(aliceZone, "milk", "Item", {title: "Milk", done: false});
    aliceApp.edit(aliceZone, "eggs", "Item", {title: "Eggs", done: false});
    await aliceApp.engine.sendChanges();
    await bobApp.engine.fetchChanges();
    assert.deepEqual(Object.keys(bobApp.fields(aliceZone)), ["eggs", "milk"]);

    // Both change "milk" from the same version: Alice renames it, Bob ticks it.
    aliceApp.edit(aliceZone, "milk", "Item", {title: "Oat milk"});
    bobApp.edit(aliceZone, "milk", "Item", {done: true});
    bobApp.edit(aliceZone, "bread", "Item", {title: "Bread", done: false});
    await aliceApp.engine.sendChanges();
    await bobApp.engine.sendChanges();
    assert.deepEqual(bobApp.conflicts, ["milk"], "the conflict is handed to the app once");
    await bobApp.engine.sendChanges();   // the merged record
    assert.deepEqual(bobApp.conflicts, ["milk"]);
    await aliceApp.engine.fetchChanges();
    await bobApp.engine.fetchChanges();
    const expected = {bread: {done: false, title: "Bread"}, eggs: {done: false, title: "Eggs"}, milk: {done: true, title: "Oat milk"}};
    assert.deepEqual(aliceApp.fields(aliceZone), expected);
    assert.deepEqual(bobApp.fields(aliceZone), expected);
    assert.equal(aliceApp.engine.pendingRecordChanges.length + bobApp.engine.pendingRecordChanges.length, 0);
    alice.container.close(); bob.container.close();
  });

  test("an engine listening on the WebSocket fetches on the cue, and sends about 100 ms after a change", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Listen");
    await alice.container.privateDatabase.saveZone(zoneName);
    const phone = new LocalApp(alice.container.privateDatabase, {automaticallySync: true});
    const laptopContainer = new Container({baseURL: server.baseURL, token: alice.token});
    const laptop = new LocalApp(laptopContainer.privateDatabase, {automaticallySync: true});
    const zone = new ZoneID(zoneName, alice.userRecordName);
    laptop.edit(zone, "note", "Note", {text: "from the laptop"});
    await eventually(() => phone.zone(zone).get("note")?.fields.text === "from the laptop", 30, "the phone to receive the laptop's note");
    await phone.engine.stop(); await laptop.engine.stop();
    alice.container.close(); laptopContainer.close();
  });

  test("restarted from its stored state, an engine fetches only what changed; sends what was queued before the restart", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Restart");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await db.modify(zoneName, {save: Array.from({length: 30}, (_, i) => ({recordName: `r${i}`, recordType: "R", fields: {i}}))});
    const first = new LocalApp(db);
    await first.engine.fetchChanges();
    assert.equal(first.fetchedRecords, 30);
    const zone = new ZoneID(zoneName, alice.userRecordName);
    first.edit(zone, "queued", "R", {i: 99});   // queued, never sent: the app quits
    const stored = JSON.parse(JSON.stringify(first.engine.state));
    assert.equal(stored.pendingRecordChanges.length, 1);

    await db.modify(zoneName, {save: [{recordName: "r31", recordType: "R", fields: {i: 31}}], delete: ["r0"]});
    const second = new LocalApp(db, {state: stored});
    second.records = first.records;   // the app's own copy, kept beside the state
    await second.engine.fetchChanges();
    assert.equal(second.fetchedRecords, 1, "only the record changed since the stored token");
    assert.ok(!second.zone(zone).has("r0"), "the deletion arrived");
    await second.engine.sendChanges();
    assert.equal((await db.fetchRecord(zoneName, "queued")).fields.i, 99);
  });

  test("a batch refused as too large (LIMIT_EXCEEDED) is halved until it passes; nothing is lost", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Big");
    await alice.container.privateDatabase.saveZone(zoneName);
    const zone = new ZoneID(zoneName, alice.userRecordName);
    const app = new LocalApp(alice.container.privateDatabase);
    const text = "x".repeat(12_000);   // 400 of these are over the 2 MiB request limit
    for (let i = 0; i < 400; i++) app.edit(zone, `big${i}`, "Big", {text});
    await app.engine.sendChanges();
    assert.ok(app.engine.batchSize <= 200, `batch size ${app.engine.batchSize}`);
    assert.equal(app.engine.pendingRecordChanges.length, 0);
    const count = (await alice.container.privateDatabase.query(zoneName, {recordType: "Big", desiredKeys: [], pageSize: 400}).all()).length;
    assert.equal(count, 400);
  });

  test("CHANGE_TOKEN_EXPIRED: the app is told, drops the zone, and the engine fetches it again from scratch", async () => {
    const own = await LiveServer.start();
    const alice = await own.user("alice");
    const zoneName = unique("Expire");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await db.modify(zoneName, {save: [{recordName: "a", recordType: "R", fields: {}}, {recordName: "gone", recordType: "R", fields: {}}]});
    const app = new LocalApp(db);
    await app.engine.fetchChanges();
    await db.deleteRecord(zoneName, "gone");
    await own.administer("SELECT canopy.retire_server_secret('change-token')");
    await own.stop();
    await own.startProcess();
    await app.engine.fetchChanges();
    assert.ok(app.events.includes("changeTokenExpired"));
    const zone = new ZoneID(zoneName, alice.userRecordName);
    assert.deepEqual(Object.keys(app.fields(zone)), ["a"], "the record deleted during the gap is gone");
    await own.stop();
  });

  test("a gateway killed mid-batch costs retries, not data: 450 records arrive", async () => {
    const own = await LiveServer.start();
    const alice = await own.user("alice");
    const zoneName = unique("Crash");
    await alice.container.privateDatabase.saveZone(zoneName);
    const zone = new ZoneID(zoneName, alice.userRecordName);
    const app = new LocalApp(alice.container.privateDatabase);
    for (let i = 0; i < 450; i++) app.edit(zone, `c${i}`, "C", {i});
    let restarted = null;
    const handle = app.handleEvent.bind(app);
    app.handleEvent = async (event) => {
      await handle(event);
      if (event.type === "sentRecordZoneChanges" && !restarted) {
        // The first batch is in; the gateway dies before the second, and comes back a second later.
        await own.stop("SIGKILL");
        restarted = new Promise((resolve) => setTimeout(resolve, 1000)).then(() => own.startProcess());
      }
    };
    await app.engine.sendChanges();
    await restarted;
    assert.ok(app.engine.retries >= 1, `retries: ${app.engine.retries}`);
    assert.equal(app.engine.pendingRecordChanges.length, 0);
    const names = new Set((await alice.container.privateDatabase.query(zoneName, {recordType: "C", pageSize: 400}).all()).map((r) => r.recordName));
    assert.equal(names.size, 450);
    await own.stop();
  });
});

// The sync engine against live gateways: two engines converging on one
// shared zone with a conflict, a restart from stored state fetching only
// what changed, batches halved on LIMIT_EXCEEDED, change-token expiry,
// and retries through a gateway killed mid-batch.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {Container, ZoneID} from "../index.js";
import {LiveServer, eventually, unique} from "./harness.js";
import {LocalApp} from "./local-app.js";

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

// SyncedDatabase (synced-database.js) with its Node adapter, FileStorage,
// against a live gateway: an edit made offline is stored with the queue
// and sent by the next process that opens the file; two devices editing
// different fields of one record both keep theirs; a write the storage
// refuses is reported and its records go with the next; forget removes the
// file; a file that is not one is refused by name. The randomized fault run
// (fault.test.js) drives it too: every device there is a SyncedDatabase
// stored by FileStorage, killed at chosen moments.

import assert from "node:assert/strict";
import {execFile} from "node:child_process";
import {existsSync, mkdtempSync, readFileSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, test} from "node:test";
import {promisify} from "node:util";
import {Container, MemoryStorage, SyncedDatabase} from "../index.js";
import {FileStorage} from "../file-storage.js";
import {LiveServer, eventually, freePort} from "./harness.js";

let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

const folder = () => mkdtempSync(join(tmpdir(), "canopy-synced-"));

/** A container whose server is not there: every request fails as a network failure. */
async function offline(token) {
  return new Container({baseURL: `http://127.0.0.1:${await freePort()}`, token, requestTimeout: 2_000});
}

test("an edit made offline is stored with the queue, and the next process to open the file shows it and sends it", async () => {
  const alice = await server.user("offline");
  await alice.container.privateDatabase.saveZone("Notes");
  const file = join(folder(), "alice", "private.json");
  const away = await offline(alice.token);
  const first = await SyncedDatabase.open({database: away.privateDatabase, storage: new FileStorage(file), automaticallySync: false});
  await first.save("Notes", {recordName: "n1", recordType: "Note", fields: {text: "written offline", words: 2}});
  assert.equal(first.pendingCount, 1);
  await first.close();
  away.close();

  const stored = JSON.parse(readFileSync(file, "utf8"));
  assert.equal(stored.records.Notes.n1.fields.text, "written offline", "the record is in the file");
  assert.deepEqual(stored.state.pendingRecordChanges.map((change) => change.recordName), ["n1"], "with the queue, in the same file");
  assert.deepEqual(stored.edits.Notes.n1.sort(), ["text", "words"]);

  const second = await SyncedDatabase.open({database: alice.container.privateDatabase, storage: new FileStorage(file)});
  assert.equal(second.record("Notes", "n1")?.fields.text, "written offline", "shown at once, before any request");
  await eventually(async () => {
    try { return (await alice.container.privateDatabase.fetchRecord("Notes", "n1")).fields.text === "written offline"; } catch { return false; }
  }, 30, "the edit on the server");
  await eventually(() => second.pendingCount === 0 && JSON.parse(readFileSync(file, "utf8")).state.pendingRecordChanges.length === 0, 30, "nothing waiting, stored");
  await eventually(() => second.record("Notes", "n1")?.recordChangeTag, 30, "the saved change tag in the copy");
  assert.deepEqual(JSON.parse(readFileSync(file, "utf8")).edits, {}, "no edit is remembered once the server has it");
  await second.close();
  alice.container.close();
});

test("two devices editing different fields of one record at once both keep their field", async () => {
  const alice = await server.user("merge");
  await alice.container.privateDatabase.saveZone("Lists");
  const phone = await SyncedDatabase.open({database: alice.container.privateDatabase, storage: new MemoryStorage()});
  const laptopContainer = new Container({baseURL: server.baseURL, token: alice.token, WebSocket: globalThis.WebSocket});
  const laptop = await SyncedDatabase.open({database: laptopContainer.privateDatabase, storage: new MemoryStorage()});
  await phone.save("Lists", {recordName: "milk", recordType: "Item", fields: {title: "Milk", done: false}});
  await eventually(() => laptop.record("Lists", "milk")?.fields.title === "Milk", 30, "the laptop to hear of the item");

  await Promise.all([
    phone.save("Lists", {recordName: "milk", fields: {title: "Oat milk"}}),
    laptop.save("Lists", {recordName: "milk", fields: {done: true}}),
  ]);
  await eventually(async () => {
    const record = await alice.container.privateDatabase.fetchRecord("Lists", "milk");
    return record.fields.title === "Oat milk" && record.fields.done === true;
  }, 30, "both fields on the server");
  for (const [name, device] of [["phone", phone], ["laptop", laptop]]) {
    await eventually(() => {
      const record = device.record("Lists", "milk");
      return record?.fields.title === "Oat milk" && record.fields.done === true && !device.hasPendingChanges;
    }, 30, `the ${name}'s copy to hold both fields`);
  }
  await Promise.all([phone.close(), laptop.close()]);
  laptopContainer.close();
  alice.container.close();
});

test("an edit queued after its zone was deleted and made again elsewhere, before this device heard of it, reaches the new zone (fault run seed 47)", async () => {
  const alice = await server.user("remade");
  const other = alice.container.privateDatabase;
  await other.saveZone("Lists");
  await other.saveRecord("Lists", {recordName: "milk", recordType: "Item", fields: {title: "Milk", note: "from the old zone"}});
  const errors = [];
  const device = await SyncedDatabase.open({database: alice.container.privateDatabase, storage: new MemoryStorage(), automaticallySync: false,
    onError: (error) => errors.push(error)});
  await device.sync();
  assert.equal(device.record("Lists", "milk")?.fields.title, "Milk");

  // Another device deletes the zone and makes it again; this one has not fetched since.
  await other.deleteZone("Lists");
  await other.saveZone("Lists");
  await other.saveRecord("Lists", {recordName: "milk", recordType: "Item", fields: {done: true}});
  await device.save("Lists", {recordName: "milk", fields: {title: "Oat milk"}});
  await device.save("Lists", {recordName: "tea", recordType: "Item", fields: {title: "Tea"}});
  // The fetch hears of the deletion (and the new zone) before the edits are sent.
  await device.engine.fetchChanges();
  for (let pass = 0; pass < 3 && device.hasPendingChanges; pass++) await device.sync();
  assert.equal(device.hasPendingChanges, false);
  const onServer = Object.fromEntries((await other.lookup("Lists", ["milk", "tea"])).map(({recordName, record}) => [recordName, record?.fields]));
  // milk was made in the new zone meanwhile: merged as a conflict, the field edited here on top; nothing of the old zone's comes back.
  assert.deepEqual(onServer, {milk: {done: true, title: "Oat milk"}, tea: {title: "Tea"}}, "both edits in the zone made again");
  assert.deepEqual(device.record("Lists", "milk")?.fields, {done: true, title: "Oat milk"});
  assert.deepEqual(errors, []);

  // Deleted and not made again: the edit waiting is refused (reported), and the copy holds nothing of the zone.
  await device.save("Lists", {recordName: "milk", fields: {title: "Milk again"}});
  await other.deleteZone("Lists");
  await device.engine.fetchChanges();
  await device.sync();
  assert.equal(device.hasPendingChanges, false);
  assert.ok(errors.some((error) => error.code === "ZONE_NOT_FOUND"), `the refusal reported: ${errors.map((error) => error.code)}`);
  await eventually(() => device.records("Lists").length === 0, 10, "the copy to hold nothing of the deleted zone");
  await device.close();
  alice.container.close();
});

test("an edit of a record deleted elsewhere saves it again as new; made again meanwhile by another device, only the fields edited here go on top (fault run seed 48)", async () => {
  const alice = await server.user("recreated");
  const other = alice.container.privateDatabase;
  await other.saveZone("Lists");
  await other.saveRecord("Lists", {recordName: "milk", recordType: "Item", fields: {title: "Milk", byPhone: 1}});
  let remade = false;
  const device = await SyncedDatabase.open({database: alice.container.privateDatabase, storage: new MemoryStorage(), automaticallySync: false,
    onEvent: async (event) => {
      // The save is refused as UNKNOWN_ITEM; before it goes again as new, the phone makes the record again with its newer value.
      if (event.type === "sentRecordZoneChanges" && !remade && event.failedRecordSaves.some(({error}) => error.code === "UNKNOWN_ITEM")) {
        remade = true;
        await other.saveRecord("Lists", {recordName: "milk", recordType: "Item", fields: {byPhone: 2}});
      }
    }});
  await device.sync();
  await other.deleteRecord("Lists", "milk");
  await device.save("Lists", {recordName: "milk", fields: {byLaptop: 5}});
  for (let pass = 0; pass < 3 && device.hasPendingChanges; pass++) await device.sync();
  assert.ok(remade, "the save was refused as UNKNOWN_ITEM");
  assert.equal(device.hasPendingChanges, false);
  const [{record}] = await other.lookup("Lists", ["milk"]);
  assert.deepEqual(record.fields, {byPhone: 2, byLaptop: 5}, "the laptop's field on the phone's record; the phone's newer value kept");
  assert.deepEqual(device.record("Lists", "milk")?.fields, {byPhone: 2, byLaptop: 5});

  // Deleted and not made again: it comes back whole, as new.
  await other.deleteRecord("Lists", "milk");
  await device.save("Lists", {recordName: "milk", fields: {byLaptop: 6}});
  for (let pass = 0; pass < 3 && device.hasPendingChanges; pass++) await device.sync();
  const [{record: back}] = await other.lookup("Lists", ["milk"]);
  assert.deepEqual(back.fields, {byPhone: 2, byLaptop: 6}, "the record back whole");
  await device.close();
  alice.container.close();
});

test("a write the storage refuses is reported, and its records go with the next write", async () => {
  const alice = await server.user("refused");
  const storage = new MemoryStorage();
  const write = storage.write.bind(storage);
  let refuse = true;
  storage.write = async (change) => {
    if (refuse) { refuse = false; throw new Error("the disk is full"); }
    return write(change);
  };
  const errors = [];
  const away = await offline(alice.token);
  const synced = await SyncedDatabase.open({database: away.privateDatabase, storage, automaticallySync: false, onError: (error) => errors.push(error)});
  await synced.save("Notes", {recordName: "first", recordType: "Note", fields: {text: "one"}});
  await eventually(() => errors.some((error) => String(error?.message).includes("the disk is full")), 10, "the refusal reported");
  await synced.save("Notes", {recordName: "second", recordType: "Note", fields: {text: "two"}});
  const kept = await storage.load();
  assert.deepEqual(Object.keys(kept.records.Notes).sort(), ["first", "second"], "the refused write's record went with the next");
  assert.deepEqual(kept.state.pendingRecordChanges.map((change) => change.recordName).sort(), ["first", "second"]);
  await synced.close();
  away.close();
  alice.container.close();
});

test("forget removes the file; a file that is not a SyncedDatabase's is refused by its path", async () => {
  const alice = await server.user("forget");
  const file = join(folder(), "copy.json");
  const away = await offline(alice.token);
  const synced = await SyncedDatabase.open({database: away.privateDatabase, storage: new FileStorage(file), automaticallySync: false});
  await synced.save("Notes", {recordName: "n", recordType: "Note", fields: {text: "x"}});
  assert.ok(existsSync(file));
  await synced.forget();
  assert.ok(!existsSync(file), "forget removed the file");

  writeFileSync(file, "{not json");
  await assert.rejects(SyncedDatabase.open({database: away.privateDatabase, storage: new FileStorage(file)}),
    (error) => error.message.includes(file) && error.message.includes("not a SyncedDatabase file"));
  await assert.rejects(SyncedDatabase.open({database: away.privateDatabase, storage: {}}), TypeError);
  away.close();
  alice.container.close();
});

test("with the gateway away, sync() rejects at its first refused connection, not behind automatic sync's retries; whenSent() waits through the outage and settles once the server has the edit", async () => {
  const gateway = await LiveServer.start();
  const alice = await server.user("syncnow");
  let requests = 0;
  const counted = (...args) => { requests += 1; return fetch(...args); };
  const container = new Container({baseURL: gateway.baseURL, token: alice.token, fetch: counted});
  const errors = [];
  let synced;
  try {
    await container.privateDatabase.saveZone("Notes");
    synced = await SyncedDatabase.open({database: container.privateDatabase, onError: (error) => errors.push(error)});
    await eventually(() => synced.serverReachable === true, 30, "the copy online");
    await gateway.stop();
    await synced.save("Notes", {recordName: "n1", recordType: "Note", fields: {text: "while away"}});
    const sent = synced.whenSent();
    let settled = false;
    sent.then(() => { settled = true; }, () => { settled = true; });
    // Automatic sync is in its retries (each refused at once), as when the user presses "Sync now".
    await eventually(() => synced.engine.retries >= 2, 60, "automatic sync retrying");
    const [retriesBefore, requestsBefore, started] = [synced.engine.retries, requests, Date.now()];
    await assert.rejects(synced.sync(), (error) => error.code === "NETWORK_FAILURE" || assert.fail(error));
    const waited = Date.now() - started;
    // Before: ~95 s here (the background's 12 retries of up to 5 s, then its own). Now: one request of its own.
    assert.ok(waited < 15_000, `sync() rejected after ${waited} ms`);
    assert.ok(requests - requestsBefore <= 2, `sync() sent ${requests - requestsBefore} requests (one of its own, at most one of the background's in flight)`);
    assert.ok(synced.engine.retries - retriesBefore <= 1, "sync() did not retry");
    assert.equal(settled, false, "whenSent() still waits: the edit is not on the server");
    assert.equal(synced.pendingCount, 1);
    assert.ok(!errors.some((error) => error.code !== "NETWORK_FAILURE"), `only the outage was reported: ${errors.map((error) => error.code)}`);
    // A waiter given up on: its signal's reason.
    const gaveUp = new AbortController();
    const abandoned = synced.whenSent({signal: gaveUp.signal});
    gaveUp.abort();
    await assert.rejects(abandoned, {name: "AbortError"});

    await gateway.startProcess();   // the server back, on its port
    await eventually(() => settled, 120, "whenSent() to settle after the server came back");
    await sent;
    assert.equal(synced.pendingCount, 0, "settled once nothing it waited for is queued");
    assert.equal((await alice.container.privateDatabase.fetchRecord("Notes", "n1")).fields.text, "while away", "the edit is on the server");
    await synced.sync();   // with the server there, one attempt is enough

    // Closed while something waits: whenSent() rejects, the edit stays stored for the next open.
    await gateway.stop();
    await synced.save("Notes", {recordName: "n2", recordType: "Note", fields: {text: "left queued"}});
    const unsent = synced.whenSent();
    await synced.close();
    await assert.rejects(unsent, {name: "AbortError"});
  } finally {
    await synced?.close();
    container.close();
    alice.container.close();
    await gateway.stop();
  }
});

test("without a WebSocket class (Node 20 without --experimental-websocket), live changes fail once as CONFIGURATION_ERROR; the server stays reachable and edits still go over HTTP", async () => {
  const alice = await server.user("nows");
  await alice.container.privateDatabase.saveZone("Notes");
  const script = `
    import {Container, SyncedDatabase} from ${JSON.stringify(new URL("../index.js", import.meta.url).href)};
    const container = new Container({baseURL: ${JSON.stringify(server.baseURL)}, token: ${JSON.stringify(alice.token)}});
    const codes = [];
    let watched;
    try { for await (const _ of container.privateDatabase.watchZone("Notes")) break; } catch (error) { watched = error.code; }
    const notes = await SyncedDatabase.open({database: container.privateDatabase, onError: (error) => codes.push(error.code)});
    await notes.save("Notes", {recordName: "n", recordType: "Note", fields: {text: "no socket"}});
    await notes.whenSent();
    await new Promise((resolve) => setTimeout(resolve, 3000));   // room for a wrong retry loop to report again
    console.log(JSON.stringify({hasWebSocket: typeof globalThis.WebSocket, watched, codes, reachable: notes.serverReachable}));
    await notes.close();
    container.close();
  `;
  const {stdout} = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {timeout: 120_000});
  const outcome = JSON.parse(stdout.trim().split("\n").pop());
  assert.equal(outcome.hasWebSocket, "undefined", "this Node has no WebSocket without the flag");
  assert.equal(outcome.watched, "CONFIGURATION_ERROR", "watchZone names the setup, not the network");
  assert.deepEqual(outcome.codes, ["CONFIGURATION_ERROR"], "the SyncedDatabase reported it once");
  assert.equal(outcome.reachable, true, "the server is reachable");
  assert.equal((await alice.container.privateDatabase.fetchRecord("Notes", "n")).fields.text, "no socket");
  alice.container.close();
});

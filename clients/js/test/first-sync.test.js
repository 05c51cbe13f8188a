// A first sync in ranges (issue 51; docs/CHANGE_FEEDS.md "A first sync in
// ranges"): the engine reads a zone with no token in parallel ranges, then
// follows the feed, and ends equal to the zone whatever a writer does
// meanwhile, after an interruption, or when the zone is made again mid-way.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {Container, ZoneID} from "../index.js";
import {LiveServer, unique} from "./harness.js";
import {LocalApp} from "./local-app.js";

let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

/** Counts a database's zoneRanges calls and its zoneChanges requests in flight (the most at once) for one zone. */
function counting(database, zoneName) {
  const counts = {ranges: 0, pages: 0, inFlight: 0, most: 0};
  const zoneChanges = database.zoneChanges.bind(database), zoneRanges = database.zoneRanges.bind(database);
  const ours = (zone) => (typeof zone === "string" ? zone : zone.zoneName) === zoneName;
  database.zoneRanges = (zone, ...rest) => { if (ours(zone)) counts.ranges += 1; return zoneRanges(zone, ...rest); };
  database.zoneChanges = async (zone, ...rest) => {
    if (!ours(zone)) return zoneChanges(zone, ...rest);
    counts.pages += 1; counts.inFlight += 1; counts.most = Math.max(counts.most, counts.inFlight);
    try { return await zoneChanges(zone, ...rest); } finally { counts.inFlight -= 1; }
  };
  return counts;
}

/** The zone as the server has it now: name → change tag. */
async function serverCopy(database, zoneName) {
  const copy = new Map();
  for await (const page of database.fetchZoneChanges(zoneName, {limit: 400})) for (const record of page.changed) copy.set(record.recordName, record.recordChangeTag);
  return copy;
}

function localCopy(app, zone) {
  return new Map([...app.zone(zone)].map(([name, record]) => [name, record.recordChangeTag]));
}

async function fill(database, zoneName, count, prefix = "r") {
  for (let start = 0; start < count; start += 400) {
    await database.modify(zoneName, {save: Array.from({length: Math.min(400, count - start)}, (_, i) => ({recordName: `${prefix}${start + i}`, recordType: "R", fields: {i: start + i}}))});
  }
}

describe("SyncEngine: a first sync in ranges", () => {
  test("3,000 records in 4 ranges of 100-record pages: the copy equals the zone, with at most 4 pages asked at once", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Ranges");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await fill(db, zoneName, 3000);
    const counts = counting(db, zoneName);
    const app = new LocalApp(db, {pageSize: 100, firstSyncRanges: 4});
    await app.engine.fetchChanges();
    const zone = new ZoneID(zoneName, alice.userRecordName);
    assert.deepEqual(localCopy(app, zone), await serverCopy(db, zoneName));
    assert.equal(app.fetchedRecords, 3000, "each record once");
    assert.equal(counts.ranges, 1);
    assert.ok(counts.most >= 2 && counts.most <= 4, `pages in flight at most: ${counts.most}`);
    assert.deepEqual(app.savedState.zoneRanges, {}, "no first sync left under way");
    assert.ok(zoneName in app.savedState.zoneTokens, "the zone has its token");
  });

  test("a writer changes, deletes and adds records while the ranges are read: after the tail the copy equals the zone", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Churn");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await fill(db, zoneName, 2000);
    const writerContainer = new Container({baseURL: server.baseURL, token: alice.token});
    const writer = writerContainer.privateDatabase;
    const app = new LocalApp(db, {pageSize: 50, firstSyncRanges: 4});
    const handle = app.handleEvent.bind(app);
    app.handleEvent = async (event) => {
      await handle(event);
      if (event.type === "fetchedRecordZoneChanges") await new Promise((resolve) => setTimeout(resolve, 5));
    };
    let writing = true;
    const writes = (async () => {
      for (let step = 0; step < 40; step++) {
        const at = (step * 97) % 2000;
        await writer.modify(zoneName, {
          save: [{recordName: `r${at}`, recordType: "R", fields: {i: -step}}, {recordName: `new${step}`, recordType: "R", fields: {i: step}}],
          delete: [`r${(at + 1000) % 2000}`], savePolicy: "ALL_KEYS",
        });
      }
      writing = false;
    })();
    await app.engine.fetchChanges();
    await writes;
    assert.equal(writing, false);
    await app.engine.fetchChanges();   // the tail, after the writer finished
    const zone = new ZoneID(zoneName, alice.userRecordName);
    assert.deepEqual(localCopy(app, zone), await serverCopy(db, zoneName));
    writerContainer.close();
  });

  test("interrupted after 7 pages, an engine restarted from its stored state reads only the unfinished ranges, and ends equal", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Resume");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await fill(db, zoneName, 2400);
    const first = new LocalApp(db, {pageSize: 100, firstSyncRanges: 4});
    const controller = new AbortController();
    let pages = 0;
    const handle = first.handleEvent.bind(first);
    first.handleEvent = async (event) => {
      await handle(event);
      if (event.type === "fetchedRecordZoneChanges" && event.zoneID.zoneName === zoneName && ++pages === 7) controller.abort(new Error("the app quits"));
    };
    await assert.rejects(first.engine.fetchChanges({signal: controller.signal}));
    const stored = first.savedState;
    const run = Object.values(stored.zoneRanges)[0];
    assert.ok(run && run.ranges.length === 4, `a first sync under way in the stored state: ${JSON.stringify(stored.zoneRanges).slice(0, 200)}`);
    assert.ok(first.fetchedRecords >= 700 && first.fetchedRecords < 2400, `${first.fetchedRecords}`);

    const counts = counting(db, zoneName);
    const second = new LocalApp(db, {state: stored, pageSize: 100, firstSyncRanges: 4});
    second.records = first.records;   // the app's own copy, kept beside the state
    second.fetchedRecords = first.fetchedRecords;
    await second.engine.fetchChanges();
    assert.equal(counts.ranges, 0, "the stored ranges are carried on, not cut again");
    assert.equal(second.fetchedRecords, 2400, "no page handed over twice");
    const zone = new ZoneID(zoneName, alice.userRecordName);
    assert.deepEqual(localCopy(second, zone), await serverCopy(db, zoneName));
  });

  test("the zone deleted and made again mid-way: the app is told the token expired, and the new zone is read in ranges", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Remade");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await fill(db, zoneName, 1200, "old");
    const app = new LocalApp(db, {pageSize: 100, firstSyncRanges: 4});
    const handle = app.handleEvent.bind(app);
    let pages = 0;
    app.handleEvent = async (event) => {
      await handle(event);
      if (event.type === "fetchedRecordZoneChanges" && event.zoneID.zoneName === zoneName && ++pages === 3) {
        await db.deleteZone(zoneName);
        await db.saveZone(zoneName);
        await fill(db, zoneName, 500, "new");
      }
    };
    await app.engine.fetchChanges();
    await app.engine.fetchChanges();
    // A range asked for while the zone was gone is ZONE_NOT_FOUND (the zone is dropped); after, CHANGE_TOKEN_EXPIRED.
    assert.ok(app.events.includes("changeTokenExpired") || app.events.includes("fetchedDatabaseChanges"), app.events.filter((type) => type !== "stateUpdate").join(" "));
    const zone = new ZoneID(zoneName, alice.userRecordName);
    const copy = localCopy(app, zone);
    assert.deepEqual(copy, await serverCopy(db, zoneName));
    assert.equal(copy.size, 500);
  });

  for (const firstSyncRanges of [1, 4]) {
    test(`a record saved before the engine first fetched its zone, the zone then deleted and made again: the first fetch reports it deleted (${firstSyncRanges} ranges; fault run seed 14)`, async () => {
      const alice = await server.user("alice");
      const zoneName = unique("Again");
      const db = alice.container.privateDatabase;
      await db.saveZone(zoneName);
      const app = new LocalApp(db, {pageSize: 100, firstSyncRanges});
      const zone = new ZoneID(zoneName, alice.userRecordName);
      app.edit(zone, "mine", "R", {i: 1});
      await app.engine.sendChanges();   // saved; the engine has not fetched the zone yet
      assert.ok(app.zone(zone).get("mine")?.recordChangeTag, "saved");
      // Another device deletes the zone and makes it again, with other records.
      await db.deleteZone(zoneName);
      await db.saveZone(zoneName);
      await fill(db, zoneName, 250, "new");
      await app.engine.fetchChanges();
      assert.equal(app.zone(zone).has("mine"), false, "the record of the zone's old life is still in the copy");
      assert.deepEqual(localCopy(app, zone), await serverCopy(db, zoneName));
      assert.deepEqual(app.savedState.savedUnfollowed, {}, "nothing left to watch");
    });
  }

  test("a record saved before the engine first fetched its zone, the zone then deleted for good: the next fetch reports the zone deleted", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Gone");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    const app = new LocalApp(db, {pageSize: 100, firstSyncRanges: 4});
    const zone = new ZoneID(zoneName, alice.userRecordName);
    app.edit(zone, "mine", "R", {i: 1});
    await app.engine.sendChanges();
    await db.deleteZone(zoneName);   // no feed from nothing lists it now
    await app.engine.fetchChanges();
    assert.equal(app.zone(zone).has("mine"), false, "the record of the deleted zone is still in the copy");
    assert.deepEqual(app.savedState.savedUnfollowed, {}, "nothing left to watch");
  });

  test("in the public database, a save before the first fetch is not watched (its feed leaves out what a role may create but not read)", async () => {
    const alice = await server.user("alice");
    const db = alice.container.publicDatabase;
    const app = new LocalApp(db, {pageSize: 100});
    const recordName = unique("public");
    app.edit(ZoneID.default, recordName, "R", {i: 1});
    await app.engine.sendChanges();
    assert.ok(app.zone(ZoneID.default).get(recordName)?.recordChangeTag, "saved");
    assert.deepEqual(app.savedState.savedUnfollowed, {});
    await app.engine.fetchChanges();
    assert.ok(app.zone(ZoneID.default).has(recordName));
  });

  test("a zone followed while the database token is still null, deleted before the next fetch: that fetch reports the zone deleted", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Gone");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await fill(db, zoneName, 120);
    const first = new LocalApp(db, {pageSize: 100, firstSyncRanges: 4});
    await first.engine.fetchChanges();
    const zone = new ZoneID(zoneName, alice.userRecordName);
    assert.equal(first.zone(zone).size, 120);
    // As stored by an app killed after the zone's fetch, before the database token was stored.
    const stored = {...first.savedState, databaseToken: null};
    assert.ok(first.engine.canonicalZoneID(zone).key in stored.zoneTokens);
    await db.deleteZone(zoneName);
    const second = new LocalApp(db, {state: stored, pageSize: 100, firstSyncRanges: 4});
    second.records = first.records;   // the app's own copy, kept beside the state
    await second.engine.fetchChanges();
    assert.equal(second.zone(zone).size, 0, "the deleted zone's records are still in the copy");
  });

  test("firstSyncRanges: 1 reads one chain of pages, as before", async () => {
    const alice = await server.user("alice");
    const zoneName = unique("Chain");
    const db = alice.container.privateDatabase;
    await db.saveZone(zoneName);
    await fill(db, zoneName, 500);
    const counts = counting(db, zoneName);
    const app = new LocalApp(db, {pageSize: 100, firstSyncRanges: 1});
    await app.engine.fetchChanges();
    assert.equal(counts.ranges, 0);
    assert.equal(counts.most, 1);
    assert.equal(app.fetchedRecords, 500);
  });
});

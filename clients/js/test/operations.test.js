// Every operation of the client against a live gateway: zones, typed
// values, lookup, query iterators, batches and conflicts, sharing by URL,
// feeds, live subscriptions, assets, push registration, the public
// database, errors and tokens.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {Asset, CanopyError, CanopyRecord, Container, Double, ErrorCode, Location, Reference, ZoneID} from "../index.js";
import {LiveServer, eventually, unique} from "./harness.js";

let server, alice, bob;

before(async () => {
  server = await LiveServer.start();
  alice = await server.user("alice", {email: `${unique("alice")}@example.com`});
  bob = await server.user("bob", {email: `${unique("bob")}@example.com`});
});

after(async () => {
  alice?.container.close();
  bob?.container.close();
  await server?.stop();
});

const rejectsWith = (promise, code) => assert.rejects(promise, (error) => {
  assert.ok(error instanceof CanopyError, `a CanopyError, not ${error}`);
  assert.equal(error.code, code, error.message);
  return true;
});

describe("zones and records", () => {
  test("zones: save, list, delete; saving again is a no-op", async () => {
    const db = alice.container.privateDatabase;
    const name = unique("Zone");
    const zone = await db.saveZone(name);
    assert.equal(zone.zoneName, name);
    assert.equal(zone.ownerName, alice.userRecordName);
    await db.saveZone(name);
    assert.ok((await db.zones()).some((z) => z.zoneName === name));
    assert.equal(await db.deleteZone(name), true);
    assert.ok(!(await db.zones()).some((z) => z.zoneName === name));
    await rejectsWith(alice.container.sharedDatabase.saveZone("x"), ErrorCode.INVALID_ARGUMENTS);
  });

  test("typed values round-trip: Date, BigInt beyond 2^53, Double, Reference, Location, bytes, lists", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Types"))).zoneName;
    const when = new Date(Date.UTC(2026, 10, 26, 9, 30, 0, 123));
    const fixed = new Date(Date.UTC(2026, 3, 1, 12, 0, 5, 250));
    const spot = new Location(37.3349, -122.009, {horizontalAccuracy: 4.5, verticalAccuracy: 3, altitude: 21.25, speed: 1.75, course: 270.5, timestamp: fixed});
    await db.saveRecord(zone, {recordName: "target", recordType: "Thing", fields: {title: "target"}});
    const saved = await db.saveRecord(zone, new CanopyRecord({recordName: "typed", recordType: "Thing", fields: {
      title: "héllo", count: 42, big: 9007199254740993n, ratio: new Double(2), flag: true, when,
      link: new Reference("target", "DELETE_SELF"), place: new Location(52.52, 13.405), spot,
      bytes: new Uint8Array([0, 1, 2, 250, 255]), tags: ["a", "b"], dates: [when, new Date(0)],
    }}));
    assert.match(saved.recordChangeTag, /\S/);
    assert.equal(saved.created.userRecordName, alice.userRecordName);
    assert.ok(saved.created.date instanceof Date);
    const read = await db.fetchRecord(zone, "typed");
    const f = read.fields;
    assert.equal(f.title, "héllo");
    assert.equal(f.count, 42);
    assert.equal(f.big, 9007199254740993n);
    assert.equal(f.ratio, 2);
    assert.equal(f.flag, true);
    assert.ok(f.when instanceof Date && f.when.getTime() === when.getTime());
    assert.ok(f.link instanceof Reference && f.link.recordName === "target" && f.link.action === "DELETE_SELF");
    assert.ok(f.place instanceof Location && f.place.latitude === 52.52 && f.place.longitude === 13.405);
    assert.deepEqual(Object.keys(f.place).sort(), ["latitude", "longitude"], "a Location saved without options reads back without them");
    assert.ok(f.spot instanceof Location);
    assert.ok(f.spot.timestamp instanceof Date && f.spot.timestamp.getTime() === fixed.getTime(), `timestamp ${f.spot.timestamp}`);
    assert.deepEqual({...f.spot, timestamp: f.spot.timestamp.getTime()},
      {latitude: 37.3349, longitude: -122.009, horizontalAccuracy: 4.5, verticalAccuracy: 3, altitude: 21.25, speed: 1.75, course: 270.5, timestamp: fixed.getTime()});
    assert.deepEqual([...f.bytes], [0, 1, 2, 250, 255]);
    assert.deepEqual(f.tags, ["a", "b"]);
    assert.deepEqual(f.dates.map((d) => d.getTime()), [when.getTime(), 0]);
    const types = await alice.container.recordTypes();
    const thing = types.find((type) => type.name === "Thing");
    const typeOf = (name) => thing.fields.find((field) => field.name === name)?.type;
    assert.equal(typeOf("ratio"), "DOUBLE", "a Double(2) is stored as DOUBLE");
    assert.equal(typeOf("big"), "INT64");
    assert.equal(typeOf("count"), "INT64");
    assert.equal(typeOf("spot"), "LOCATION");
    await assert.rejects(db.saveRecord(zone, {recordName: "bad", recordType: "Thing", fields: {x: {}}}), /field x/);
  });

  test("lookup answers each name, found or UNKNOWN_ITEM, and desiredKeys limits the fields", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Look"))).zoneName;
    await db.modify(zone, {save: [1, 2].map((i) => ({recordName: `r${i}`, recordType: "Note", fields: {a: i, b: `b${i}`}}))});
    const results = await db.lookup(zone, ["r1", "missing", "r2"], {desiredKeys: ["a"]});
    assert.deepEqual(results.map((r) => r.recordName), ["r1", "missing", "r2"]);
    assert.deepEqual(results[0].record.fields, {a: 1});
    assert.equal(results[1].record, null);
    assert.equal(results[1].error.code, ErrorCode.UNKNOWN_ITEM);
    assert.equal(results[1].error.status, 200, "a name's error has the status of the answer that carried it");
    await rejectsWith(db.fetchRecord(zone, "missing"), ErrorCode.UNKNOWN_ITEM);
    await rejectsWith(bob.container.privateDatabase.fetchRecord(new ZoneID(zone, alice.userRecordName), "r1"), ErrorCode.ZONE_NOT_FOUND);
  });

  test("query: a filter with arguments, a sort, and pages read by keyset cursor as the iterator is consumed", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Query"))).zoneName;
    const records = Array.from({length: 25}, (_, i) => ({recordName: `n${String(i).padStart(2, "0")}`, recordType: "Item",
      fields: {rank: i, kind: i % 2 === 0 ? "even" : "odd", at: new Date(1_700_000_000_000 + i * 1000)}}));
    await db.modify(zone, {save: records});
    const seen = [];
    for await (const record of db.query(zone, {recordType: "Item", filter: "kind == $k AND at >= $from", args: {k: "even", from: {type: "TIMESTAMP", value: 1_700_000_004_000}},
      sort: [{field: "rank", direction: "DESC"}], pageSize: 3, desiredKeys: ["rank"]})) {
      seen.push(record.fields.rank);
    }
    assert.deepEqual(seen, [24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4]);
    const pages = [];
    for await (const page of db.query(zone, {recordType: "Item", sort: ["rank"], pageSize: 10}).pages()) pages.push(page.records.length);
    assert.deepEqual(pages, [10, 10, 5]);
    const first = await db.query(zone, {recordType: "Item", sort: ["rank"], pageSize: 10}).pages().next();
    const rest = await db.query(zone, {recordType: "Item", sort: ["rank"], pageSize: 10, cursor: first.value.cursor}).all();
    assert.equal(rest[0].fields.rank, 10);
    assert.equal(rest.length, 15);
    await rejectsWith(db.query(zone, {recordType: "Item", filter: "rank == 'x'"}).all(), ErrorCode.INVALID_ARGUMENTS);
  });

  test("query: ANY tags BEGINSWITH $p matches records with a member of a string list starting with the prefix, and its negation", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Prefix"))).zoneName;
    await db.modify(zone, {save: [
      {recordName: "a", recordType: "Tagged", fields: {title: "a", tags: ["apple", "pear"]}},
      {recordName: "b", recordType: "Tagged", fields: {title: "b", tags: ["grape", "apricot"]}},
      {recordName: "c", recordType: "Tagged", fields: {title: "c", tags: ["banana", "Apple"]}},
      {recordName: "d", recordType: "Tagged", fields: {title: "d"}},
    ]});
    const names = async (filter, args) => (await db.query(zone, {recordType: "Tagged", filter, args, sort: ["title"]}).all()).map((r) => r.recordName);
    assert.deepEqual(await names("ANY tags BEGINSWITH $p", {p: "ap"}), ["a", "b"]);
    assert.deepEqual(await names("ANY tags BEGINSWITH $p", {p: "pea"}), ["a"]);
    assert.deepEqual(await names("ANY tags BEGINSWITH $p AND title != $t", {p: "ap", t: "a"}), ["b"]);
    assert.deepEqual(await names("ANY tags BEGINSWITH $p", {p: "kiwi"}), []);
    assert.deepEqual(await names("NOT (ANY tags BEGINSWITH $p)", {p: "ap"}), ["c", "d"], "a record without the field matches the negation, as in CloudKit");
    await rejectsWith(db.query(zone, {recordType: "Tagged", filter: "ANY title BEGINSWITH $p", args: {p: "a"}}).all(), ErrorCode.INVALID_ARGUMENTS);
  });

  test("modify: per-record results, SERVER_RECORD_CHANGED with the server's record, atomic batches all or nothing", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Modify"))).zoneName;
    const v1 = await db.saveRecord(zone, {recordName: "doc", recordType: "Doc", fields: {text: "one"}});
    const v2 = await db.saveRecord(zone, {...v1, fields: {text: "two"}});
    assert.notEqual(v2.recordChangeTag, v1.recordChangeTag);
    const stale = await db.modify(zone, {save: [{...v1, fields: {text: "stale"}}, {recordName: "other", recordType: "Doc", fields: {text: "x"}}], atomic: false});
    assert.deepEqual(stale.saved.map((r) => r.recordName), ["other"]);
    assert.equal(stale.errors.length, 1);
    const conflict = stale.errors[0];
    assert.ok(conflict instanceof CanopyError);
    assert.equal(conflict.code, ErrorCode.SERVER_RECORD_CHANGED);
    assert.equal(conflict.status, 200, "a record's error has the status of the batch's answer, as a zone's error does");
    assert.equal(conflict.recordName, "doc");
    assert.ok(conflict.serverRecord instanceof CanopyRecord);
    assert.equal(conflict.serverRecord.fields.text, "two");
    assert.equal(conflict.serverRecord.recordChangeTag, v2.recordChangeTag);
    await assert.rejects(db.saveRecord(zone, {...v1, fields: {text: "stale"}}), (error) => error.code === ErrorCode.SERVER_RECORD_CHANGED && error.serverRecord.fields.text === "two");

    const atomic = await db.modify(zone, {save: [{recordName: "fresh", recordType: "Doc", fields: {text: "new"}}, {...v1, fields: {text: "stale"}}]});
    assert.equal(atomic.saved.length, 0);
    assert.deepEqual(atomic.errors.map((e) => e.code).sort(), [ErrorCode.BATCH_REQUEST_FAILED, ErrorCode.SERVER_RECORD_CHANGED]);
    assert.equal((await db.lookup(zone, ["fresh"]))[0].record, null, "nothing of a failed atomic batch is kept");

    const merged = await db.modify(zone, {save: [{recordName: "doc", recordType: "Doc", fields: {extra: 1}}], savePolicy: "CHANGED_KEYS"});
    assert.deepEqual(merged.saved[0].fields, {text: "two", extra: 1});
    const deleted = await db.modify(zone, {delete: ["other"], deleteIfUnchanged: [{recordName: "doc", recordChangeTag: v1.recordChangeTag}], atomic: false});
    assert.deepEqual(deleted.deleted, ["other"]);
    assert.equal(deleted.errors[0].code, ErrorCode.SERVER_RECORD_CHANGED);
    await assert.rejects(db.modify(zone, {save: Array.from({length: 401}, (_, i) => ({recordName: `m${i}`, recordType: "Doc", fields: {}}))}),
      (error) => error.code === ErrorCode.LIMIT_EXCEEDED);
  });

  test("moveRecords moves a record with its descendants to another zone", async () => {
    const db = alice.container.privateDatabase;
    const from = (await db.saveZone(unique("From"))).zoneName;
    const to = (await db.saveZone(unique("To"))).zoneName;
    await db.modify(from, {save: [{recordName: "p", recordType: "T", fields: {}}, {recordName: "c", recordType: "T", fields: {}, parent: "p"}]});
    const result = await db.moveRecords(from, to, ["p"]);
    assert.deepEqual(result.moved.sort(), ["c", "p"]);
    assert.equal((await db.fetchRecord(to, "c")).parent, "p");
  });
});

describe("sharing", () => {
  test("share a zone with a person and a public link; metadata; accept by URL; READ_ONLY refused; leave", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Shared"))).zoneName;
    await db.saveRecord(zone, {recordName: "list", recordType: "List", fields: {title: "Groceries"}});
    let share = await db.saveShare(zone, {title: "Groceries", participants: [{userRecordName: bob.userRecordName, permission: "READ_ONLY"}]});
    assert.match(share.url, /\/share\//);
    assert.equal(share.title, "Groceries");
    assert.equal(share.owner.user.userRecordName, alice.userRecordName);
    assert.equal(share.participants.find((p) => p.user?.userRecordName === bob.userRecordName)?.status, "PENDING");
    share = await db.saveShare(zone, {publicPermission: "READ_ONLY"});
    assert.equal(share.publicPermission, "READ_ONLY");
    assert.equal(share.title, "Groceries", "options not given stay as they were");
    assert.equal((await db.share(zone)).url, share.url);

    const metadata = await bob.container.shareMetadata(share.url);
    assert.equal(metadata.title, "Groceries");
    assert.equal(metadata.ownerName, alice.userRecordName);
    assert.equal(metadata.status, "PENDING");
    const accepted = await bob.container.acceptShare(share.url);
    assert.equal(accepted.status, "ACCEPTED");
    const shared = bob.container.sharedDatabase;
    const zones = await shared.zones();
    const sharedZone = zones.find((z) => z.zoneName === zone);
    assert.equal(sharedZone.ownerName, alice.userRecordName);
    assert.equal((await shared.fetchRecord(sharedZone, "list")).fields.title, "Groceries");
    await rejectsWith(shared.saveRecord(sharedZone, {recordName: "mine", recordType: "List", fields: {}}), ErrorCode.PERMISSION_FAILURE);

    await db.setParticipant(zone, {userRecordName: bob.userRecordName, permission: "READ_WRITE"});
    await shared.saveRecord(sharedZone, {recordName: "mine", recordType: "List", fields: {title: "from Bob"}});
    assert.equal((await db.fetchRecord(zone, "mine")).fields.title, "from Bob");
    const activity = [];
    for await (const entry of db.shareActivity(zone)) activity.push(entry.event);
    assert.ok(activity.includes("SHARE_CREATED") && activity.includes("ACCEPTED"), activity.join());

    assert.equal(await shared.leaveShare(sharedZone), true);
    assert.ok(!(await shared.zones()).some((z) => z.zoneName === zone));
    share = await db.setParticipant(zone, {email: "someone@example.com", permission: "READ_ONLY"});
    assert.ok(share.participants.some((p) => p.email === "someone@example.com"));
    share = await db.removeParticipant(zone, {email: "someone@example.com"});
    assert.ok(!share.participants.some((p) => p.email === "someone@example.com" && p.status !== "REMOVED"));
    assert.equal(await db.deleteShare(zone), true);
    assert.equal(await db.share(zone), null);
  });

  test("zones({withShares}) answers each zone with its whole share: title, owner, people", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Listed"))).zoneName;
    const email = `${unique("listed")}@example.com`;
    await db.saveShare(zone, {title: "Listed things", participants: [{email, permission: "READ_ONLY"}]});
    const listed = (await db.zones({withShares: true})).find((candidate) => candidate.zoneName === zone);
    assert.equal(listed?.share?.title, "Listed things");
    assert.equal(listed.share.owner?.user?.userRecordName, alice.userRecordName);
    assert.ok(listed.share.participants.some((person) => person.email === email && person.permission === "READ_ONLY"), JSON.stringify(listed.share.participants));
    const plain = (await db.zones()).find((candidate) => candidate.zoneName === zone);
    assert.deepEqual(Object.keys(plain.share ?? {}), ["url"], "without withShares: the link only");
  });

  test("access requests: a stranger asks from the URL, the owner approves", async () => {
    const carol = await server.user("carol");
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Ask"))).zoneName;
    const share = await db.saveShare(zone, {title: "Ask", allowsAccessRequests: true});
    const asked = await carol.container.requestShareAccess(share.url);
    assert.equal(asked.accessRequestStatus, "PENDING");
    const pending = await db.share(zone);
    assert.equal(pending.accessRequests[0].user.userRecordName, carol.userRecordName);
    const approved = await db.decideAccessRequest(zone, carol.userRecordName, "approve", {permission: "READ_WRITE"});
    const carolIn = approved.participants.find((p) => p.user?.userRecordName === carol.userRecordName);
    assert.equal(carolIn.permission, "READ_WRITE");
    assert.equal(carolIn.isApprovedRequester, true);
    carol.container.close();
  });
});

describe("change feeds", () => {
  test("zone and database feeds with tokens: only what changed after a token, tombstones, pages", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Feed"))).zoneName;
    await db.modify(zone, {save: Array.from({length: 5}, (_, i) => ({recordName: `f${i}`, recordType: "F", fields: {i}}))});
    const pages = [];
    let token = null;
    for await (const page of db.fetchZoneChanges(zone, {limit: 2})) { pages.push(page.changed.length); token = page.token; }
    assert.deepEqual(pages, [2, 2, 1]);
    const dbStart = (await db.databaseChanges()).token;
    await db.modify(zone, {save: [{recordName: "f9", recordType: "F", fields: {i: 9}}], delete: ["f0"]});
    const next = await db.zoneChanges(zone, {since: token});
    assert.deepEqual(next.changed.map((r) => r.recordName), ["f9"]);
    assert.deepEqual(next.deleted.map((t) => t.recordName), ["f0"]);
    assert.equal(next.moreComing, false);
    const changedZones = [];
    for await (const page of db.fetchDatabaseChanges({since: dbStart})) changedZones.push(...page.changedZones.map((z) => z.zoneName));
    assert.deepEqual(changedZones, [zone]);
    await rejectsWith(db.zoneChanges(zone, {since: "forged-token"}), ErrorCode.INVALID_ARGUMENTS);
  });

  test("zoneChangeToken and databaseChangeToken: the feeds' ends now, from which only later changes come", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Now"))).zoneName;
    // More than one page of 400: the end is found past the first.
    for (const half of [0, 1]) {
      await db.modify(zone, {save: Array.from({length: 225}, (_, i) => ({recordName: `n${half}-${i}`, recordType: "N", fields: {i}}))});
    }
    const [zoneEnd, databaseEnd] = await Promise.all([db.zoneChangeToken(zone), db.databaseChangeToken()]);
    await db.saveRecord(zone, {recordName: "later", recordType: "N", fields: {i: -1}});
    const next = await db.zoneChanges(zone, {since: zoneEnd});
    assert.deepEqual(next.changed.map((r) => r.recordName), ["later"], "after the zone's end: only the later save (the 450 before are behind it)");
    const changedZones = [];
    for await (const page of db.fetchDatabaseChanges({since: databaseEnd})) changedZones.push(...page.changedZones.map((z) => z.zoneName));
    assert.deepEqual(changedZones, [zone]);
  });

  test("watchZone: live pages over the WebSocket, resumed from the last token after the gateway restarts", async () => {
    const own = await LiveServer.start();
    const user = await own.user("watcher");
    const db = user.container.privateDatabase;
    const zone = (await db.saveZone(unique("Live"))).zoneName;
    await db.saveRecord(zone, {recordName: "before", recordType: "L", fields: {}});
    const start = (await db.zoneChanges(zone)).token;
    const controller = new AbortController();
    const received = [];
    const watching = (async () => {
      for await (const page of db.watchZone(zone, {since: start, signal: controller.signal})) {
        received.push(...page.changed.map((r) => r.recordName), ...page.deleted.map((t) => `-${t.recordName}`));
      }
    })();
    await db.saveRecord(zone, {recordName: "one", recordType: "L", fields: {}});
    await eventually(() => received.includes("one"), 20, "the live page of 'one'");
    await own.stop();
    await own.startProcess();
    await db.saveRecord(zone, {recordName: "two", recordType: "L", fields: {}});
    await db.deleteRecord(zone, "before");
    await eventually(() => received.includes("two") && received.includes("-before"), 30, "the pages after the restart");
    assert.ok(user.container.live.reconnects >= 1);
    assert.equal(received.filter((name) => name === "one").length, 1, `resumed from the last token, not from the start: ${received}`);
    controller.abort();
    await watching;
    user.container.close();
    await own.stop();
  });

  test("a stranger's watch of a zone ends with ZONE_NOT_FOUND; a refused token ends with NOT_AUTHENTICATED", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Private"))).zoneName;
    const stranger = bob.container.privateDatabase.watchZone(new ZoneID(zone, alice.userRecordName));
    await rejectsWith((async () => { for await (const _ of stranger) { /* nothing */ } })(), ErrorCode.ZONE_NOT_FOUND);
    const nobody = new Container({baseURL: server.baseURL, token: "cnp_0000000000000000_notatoken"});
    await rejectsWith((async () => { for await (const _ of nobody.privateDatabase.watchDatabase()) { /* nothing */ } })(), ErrorCode.NOT_AUTHENTICATED);
  });

  test("CHANGE_TOKEN_EXPIRED after the token key is retired", async () => {
    const own = await LiveServer.start();
    const user = await own.user("expiry");
    const db = user.container.privateDatabase;
    const zone = (await db.saveZone(unique("Old"))).zoneName;
    const token = (await db.zoneChanges(zone)).token;
    // As after a restore: the server's token key is retired, and the gateway starts again.
    await own.administer("SELECT canopy.retire_server_secret('change-token')");
    await own.stop();
    await own.startProcess();
    await rejectsWith(db.zoneChanges(zone, {since: token}), ErrorCode.CHANGE_TOKEN_EXPIRED);
    await own.stop();
  });
});

describe("assets, push, public database, tokens, errors", () => {
  test("an asset uploaded from a Blob and from bytes, attached, read back by its download URL", async () => {
    const db = alice.container.privateDatabase;
    const zone = (await db.saveZone(unique("Files"))).zoneName;
    const picture = await alice.container.uploadAsset(new Blob(["pretend png"], {type: "image/png"}));
    assert.ok(picture instanceof Asset && picture.uploadToken);
    const bytes = await alice.container.uploadAsset(new Uint8Array([1, 2, 3]), {contentType: "application/x-test"});
    await db.saveRecord(zone, {recordName: "photo", recordType: "Photo", fields: {image: picture, files: [bytes]}});
    const read = await db.fetchRecord(zone, "photo");
    assert.equal(read.fields.image.contentType, "image/png");
    assert.equal(read.fields.image.size, 11);
    assert.match(read.fields.image.downloadURL, /^http:\/\/127\.0\.0\.1/);
    assert.equal(new TextDecoder().decode(await alice.container.downloadAsset(read.fields.image)), "pretend png");
    assert.deepEqual([...await bob.container.downloadAsset(read.fields.files[0])], [1, 2, 3]);
    const again = await db.saveRecord(zone, {...read, fields: {...read.fields, caption: "kept"}});
    assert.equal(again.fields.image.sha256, read.fields.image.sha256, "saving back what was read keeps the asset");
    await rejectsWith(db.saveRecord(zone, {recordName: "reuse", recordType: "Photo", fields: {image: picture}}), ErrorCode.INVALID_ARGUMENTS);
  });

  test("storage: storageUsage() counts what is saved; past a quota a save and an upload are QUOTA_EXCEEDED, not retryable; deleting frees it", async () => {
    const carol = await server.user("carol");
    try {
      const db = carol.container.privateDatabase;
      const zone = (await db.saveZone(unique("Full"))).zoneName;
      await db.saveRecord(zone, {recordName: "a", recordType: "Note", fields: {text: "x".repeat(500)}});
      const before = await carol.container.storageUsage();
      assert.equal(before.recordCount, 1);
      assert.ok(before.storedBytes > 500 && before.usedBytes === before.storedBytes, JSON.stringify(before));
      await server.canopy(["quotas", "set", carol.name, String(before.storedBytes + 100)]);
      assert.equal((await carol.container.storageUsage()).quotaBytes, before.storedBytes + 100);
      await assert.rejects(db.saveRecord(zone, {recordName: "b", recordType: "Note", fields: {text: "y".repeat(500)}}), (error) => {
        assert.equal(error.code, ErrorCode.QUOTA_EXCEEDED, error.message);
        assert.equal(error.isRetryable, false);
        assert.match(error.message, /your storage is full/);
        return true;
      });
      await rejectsWith(carol.container.uploadAsset(new Uint8Array(1000)), ErrorCode.QUOTA_EXCEEDED);
      await db.deleteRecord(zone, "a");
      assert.equal((await carol.container.storageUsage()).usedBytes, 0);
      await db.saveRecord(zone, {recordName: "b", recordType: "Note", fields: {text: "y".repeat(500)}});
    } finally {
      carol.container.close();
    }
  });

  test("push: the VAPID key, a Web Push subscription and a webhook registered, listed and unregistered; a subscription saved", async () => {
    const key = await alice.container.vapidPublicKey();
    assert.equal(Buffer.from(key, "base64url").length, 65);
    const webPush = await alice.container.registerWebPush({endpoint: "http://127.0.0.1:9/push/abc", keys: {
      p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString("base64url"), auth: Buffer.alloc(16, 1).toString("base64url")}});
    assert.equal(webPush.kind, "WEB_PUSH");
    const hook = await alice.container.registerWebhook("http://127.0.0.1:9/hook");
    assert.equal(hook.kind, "WEBHOOK");
    assert.match(hook.signingSecret, /\S{16,}/);
    const devices = await alice.container.devices();
    assert.deepEqual(devices.map((d) => d.deviceID).sort(), [webPush.deviceID, hook.deviceID].sort());
    assert.equal(await alice.container.unregisterDevice(hook.deviceID), true);
    assert.equal(await alice.container.unregisterDevice(hook.deviceID), false);
    const db = alice.container.privateDatabase;
    const subscription = await db.saveSubscription({subscriptionID: "all", kind: "DATABASE"});
    assert.equal(subscription.kind, "DATABASE");
    assert.deepEqual((await db.subscriptions()).map((s) => s.subscriptionID), ["all"]);
    assert.equal(await db.deleteSubscription("all"), true);
    await rejectsWith(db.deleteSubscription("all"), ErrorCode.UNKNOWN_ITEM);
    await assert.rejects(alice.container.registerWebPush({endpoint: "x"}), TypeError);
  });

  test("public database: saved signed in, read by nobody; nobody cannot write", async () => {
    const name = unique("recipe");
    await alice.container.publicDatabase.saveRecord(ZoneID.default, {recordName: name, recordType: "Recipe", fields: {title: "Soup"}});
    const anyone = new Container({baseURL: server.baseURL});
    const read = await anyone.publicDatabase.fetchRecord(ZoneID.default, name);
    assert.equal(read.fields.title, "Soup");
    assert.equal(read.created.userRecordName, alice.userRecordName);
    const found = await anyone.publicDatabase.query(ZoneID.default, {recordType: "Recipe", filter: "title == 'Soup'"}).all();
    assert.ok(found.some((r) => r.recordName === name));
    await rejectsWith(anyone.publicDatabase.saveRecord(ZoneID.default, {recordName: unique("x"), recordType: "Recipe", fields: {}}), ErrorCode.NOT_AUTHENTICATED);
    await rejectsWith(bob.container.publicDatabase.saveRecord(ZoneID.default, {...read, fields: {title: "Mine"}}), ErrorCode.PERMISSION_FAILURE);
  });

  test("an expired token: the provider is asked again with refresh, and the request goes through", async () => {
    const user = await server.user("refresh");
    let calls = 0;
    const refreshes = [];
    const container = new Container({baseURL: server.baseURL, tokenProvider: async ({refresh}) => {
      calls += 1;
      refreshes.push(refresh);
      return refresh ? server.token(user.name) : user.token;
    }});
    assert.equal(await container.userRecordName(), user.userRecordName);
    await server.revoke(user.token);
    // The gateway may trust a token it checked for a few seconds (docs/IDENTITY.md): ask until it refuses.
    await eventually(async () => (await container.userRecordName()) === user.userRecordName && refreshes.includes(true), 30, "the refused token to be refreshed");
    assert.equal(refreshes.filter((refresh) => refresh).length, 1, "asked to refresh once");
    assert.ok(calls >= 2);
    let stuckCalls = 0;
    const stuck = new Container({baseURL: server.baseURL, tokenProvider: () => { stuckCalls += 1; return user.token; }});
    await rejectsWith(stuck.currentUser(), ErrorCode.NOT_AUTHENTICATED);
    assert.equal(stuckCalls, 2, "asked once more with refresh, then the refusal is thrown");
  });

  test("errors: a rate limit is REQUEST_RATE_LIMITED with retryAfter; an unreachable server NETWORK_FAILURE; a bad document BAD_REQUEST; abort", async () => {
    const limited = await LiveServer.start(["--rate-limit", "1", "--rate-burst", "2"]);
    const user = await limited.user("limited");
    let error;
    for (let i = 0; i < 30 && !error; i++) {
      try { await user.container.currentUser(); } catch (caught) { error = caught; }
    }
    assert.ok(error instanceof CanopyError, "the rate limit answered");
    assert.equal(error.code, ErrorCode.REQUEST_RATE_LIMITED);
    assert.equal(error.status, 429);
    assert.ok(error.retryAfter >= 1, `retryAfter ${error.retryAfter}`);
    assert.equal(error.isRetryable, true);
    await limited.stop();
    await rejectsWith(user.container.currentUser(), ErrorCode.NETWORK_FAILURE);
    await rejectsWith(alice.container.graphql("{ nope }"), ErrorCode.BAD_REQUEST);
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(alice.container.currentUser({signal: controller.signal}), (e) => e.name === "AbortError");
  });
});

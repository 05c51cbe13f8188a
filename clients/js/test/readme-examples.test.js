// The README's examples, run as they are written (their import lines, the
// gateway's address and the first page's one-minute watch aside): what a
// developer copies is what is tested. The first page makes a list, saves,
// queries, changes and shares an item and watches the zone; the sync
// engine example saves a note, the note reaches the server, and a second
// run from what the first stored starts with the note and nothing waiting.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {after, before, test} from "node:test";
import {CanopyError, CanopyRecord, Container, ErrorCode, Reference, SyncEngine} from "../index.js";
import {LiveServer, eventually} from "./harness.js";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** The first ```js block after `heading`, without its import lines. */
function example(heading) {
  const section = readme.slice(readme.indexOf(heading));
  const block = section.slice(section.indexOf("```js\n") + 6, section.indexOf("\n```", section.indexOf("```js\n")));
  return block.split("\n").filter((line) => !line.startsWith("import ")).join("\n");
}

const AsyncFunction = (async () => {}).constructor;

let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

test("the README's first page runs as written: a list, an item saved, queried, changed and shared, the zone watched", async () => {
  const alice = await server.user("alice");
  const code = example("## A first page")
    .replaceAll("https://canopy.example.com", server.baseURL)
    .replace("AbortSignal.timeout(60_000)", "AbortSignal.timeout(3_000)");
  assert.ok(code.includes(server.baseURL) && code.includes("AbortSignal.timeout(3_000)"), "the example still has the address and the watch it had");
  const logged = [];
  const console = {log: (...values) => logged.push(values)};
  const run = new AsyncFunction("Container", "CanopyError", "ErrorCode", "Reference", "signInAgain", "storedToken", "console", code);
  try {
    await run(Container, CanopyError, ErrorCode, Reference, async () => alice.token, () => alice.token, console);
  } catch (error) {
    // The watch ends when its signal aborts.
    assert.ok(error?.name === "TimeoutError" || error?.name === "AbortError", `the example failed: ${error?.stack ?? error}`);
  }
  assert.deepEqual(logged[0]?.slice(0, 1), ["Milk"], `the query printed the item: ${JSON.stringify(logged)}`);
  assert.ok(logged[0][1] instanceof Date, "with its modification date");
  assert.ok(!logged.some((line) => line[0] === "changed meanwhile; the server has"), "the change was its own, not a conflict");
  assert.ok(logged.some((line) => line[0] === "send Bob" && String(line[1]).startsWith(`${server.baseURL}/share/`)), `the share URL: ${JSON.stringify(logged)}`);
  assert.ok(logged.some((line) => line[0] === "changed" && line[1].length === 1), `the watch saw the item: ${JSON.stringify(logged)}`);
  const [item] = await alice.container.privateDatabase.query("Groceries", {recordType: "Item"}).all();
  assert.equal(item.fields.done, true, "the item is done on the server");
  alice.container.close();
});

test("the sync engine example of the README runs as written: the note is sent, stored, and there after a restart", async () => {
  const alice = await server.user("alice");
  await alice.container.privateDatabase.saveZone("Notes");
  const items = new Map();
  const localStorage = {getItem: (key) => items.get(key) ?? null, setItem: (key, value) => items.set(key, String(value))};
  const statuses = [];
  const run = new AsyncFunction("container", "localStorage", "showStatus", "CanopyRecord", "SyncEngine",
    `${example("## The sync engine")}\nreturn {engine, store, zoneOf};`);
  const first = await run(alice.container, localStorage, (status) => statuses.push(status), CanopyRecord, SyncEngine);
  await eventually(async () => {
    try { return (await alice.container.privateDatabase.fetchRecord("Notes", "n1")).fields.text === "hi"; } catch { return false; }
  }, 30, "the README's note on the server");
  await eventually(() => JSON.parse(items.get("app")).state.pendingRecordChanges.length === 0, 30, "the stored state to hold nothing waiting");
  await first.engine.stop();
  assert.deepEqual(statuses.filter((status) => status !== "Online"), [], `statuses: ${statuses}`);

  // Started again from what it stored: the note is in the copy, and nothing waits.
  const second = await run(alice.container, localStorage, () => {}, CanopyRecord, SyncEngine);
  assert.equal(second.zoneOf("Notes").get("n1").fields.text, "hi");
  await eventually(() => !second.engine.hasPendingChanges, 30, "the second run to have nothing waiting");
  await second.engine.stop();
  alice.container.close();
});

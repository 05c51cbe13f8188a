// The README's sync engine example, run as it is written (its import line
// aside): what a developer copies is what is tested. It saves a note, the
// note reaches the server, and a second run from what the first stored
// starts with the note and nothing waiting.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {after, before, test} from "node:test";
import {CanopyRecord, SyncEngine} from "../index.js";
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

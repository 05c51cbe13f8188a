// The README's examples, run as they are written (their import lines, the
// gateway's address and the first page's one-minute watch aside): what a
// developer copies is what is tested. The first page makes a list, saves,
// queries, changes and shares an item and watches the zone; the sync
// engine example saves a note, the note reaches the server, and a second
// run from what the first stored starts with the note and nothing waiting.

import assert from "node:assert/strict";
import {mkdtempSync, readFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, test} from "node:test";
import {Asset, CanopyError, Container, Double, ErrorCode, Location, Reference, SyncedDatabase} from "../index.js";
import {FileStorage} from "../file-storage.js";
import {LiveServer, eventually} from "./harness.js";
import {compile, project} from "./typescript.js";

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** The first ```js block after `heading`, without its import lines. */
function example(heading) {
  const section = readme.slice(readme.indexOf(heading));
  const block = section.slice(section.indexOf("```js\n") + 6, section.indexOf("\n```", section.indexOf("```js\n")));
  return block.split("\n").filter((line) => !line.startsWith("import ")).join("\n");
}

/** Every ```js block that imports the package, whole, in order. */
function packageExamples() {
  return [...readme.matchAll(/```js\n([\s\S]*?)\n```/g)].map((match) => match[1]).filter((block) => block.includes('from "@canopy/client"'));
}

/**
 * What the examples leave to the app, declared for the compiler: the
 * app's own functions and the container a later example reuses.
 */
const appGlobals = `
declare function signInAgain(): Promise<string>;
declare function storedToken(): string;
declare function showStatus(status: string): void;
declare const container: import("@canopy/client").Container;
`;

const AsyncFunction = (async () => {}).constructor;

let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

test("the README's first page runs as written: a list, an item saved, queried, changed and shared, the zone watched", async () => {
  const alice = await server.user("alice");
  const code = example("## A first page")
    .replaceAll("https://canopy.example.com", server.baseURL)
    .replace("setTimeout(() => stop.abort(), 60_000)", "setTimeout(() => stop.abort(), 3_000)");
  assert.ok(code.includes(server.baseURL) && code.includes("setTimeout(() => stop.abort(), 3_000)"), "the example still has the address and the watch it had");
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

test("every example of the README compiles under tsc --strict as written", async () => {
  const blocks = packageExamples();
  assert.ok(blocks.length >= 3, `the README's examples: ${blocks.length}`);
  const files = Object.fromEntries(blocks.map((block, index) => [`example-${index + 1}.ts`, block]));
  const directory = project({...files, "app-globals.d.ts": appGlobals});
  const compiled = await compile(directory, [...Object.keys(files), "app-globals.d.ts"]);
  assert.ok(compiled.ok, `tsc --strict refused the README's examples (example-N is the Nth \`\`\`js block importing @canopy/client):\n${compiled.output}`);
});

test("the README's values example makes a value of every field type, and each saves and reads back as its type", async () => {
  const alice = await server.user("values");
  const run = new AsyncFunction("container", "Asset", "Double", "Location", "Reference", `${example("### Making values")}\nreturn fields;`);
  const fields = await run(alice.container, Asset, Double, Location, Reference);
  const db = alice.container.privateDatabase;
  await db.saveZone("Values");
  await db.saveRecord("Values", {recordName: "every", recordType: "Values", fields});
  const read = await db.fetchRecord("Values", "every");
  assert.ok(read.fields.list instanceof Reference && read.fields.owner.action === "DELETE_SELF");
  assert.ok(read.fields.where instanceof Location && read.fields.where.horizontalAccuracy === 5 && read.fields.where.timestamp instanceof Date);
  assert.equal(read.fields.price, 2);
  const [typed] = (await alice.container.recordTypes()).filter((type) => type.name === "Values");
  const types = Object.fromEntries((typed?.fields ?? []).map((field) => [field.name, field.type]));
  assert.equal(types.price, "DOUBLE", `price is stored as a DOUBLE: ${JSON.stringify(types)}`);
  assert.equal(types.count, "INT64");
  assert.equal(read.fields.big, 9007199254740993n);
  assert.ok(read.fields.photo instanceof Asset && read.fields.photo.size === 3, JSON.stringify(read.fields.photo));
  assert.deepEqual([...read.fields.bytes], [1, 2, 3]);
  assert.deepEqual(read.fields.tags, ["a", "b"]);
  alice.container.close();
});

test("the offline example of the README runs as written: the note is shown at once, stored, sent, and there after a restart", async () => {
  const alice = await server.user("alice");
  // Node has no IndexedDB: the same adapter interface, kept in a file (the
  // browser's IndexedDBStorage runs in Chromium in the TodoWeb story).
  const directory = mkdtempSync(join(tmpdir(), "canopy-readme-"));
  class IndexedDBStorage extends FileStorage {
    constructor(name) { super(join(directory, `${encodeURIComponent(name)}.json`)); }
  }
  const statuses = [], logged = [];
  const console = {log: (...values) => logged.push(values)};
  const run = new AsyncFunction("container", "IndexedDBStorage", "SyncedDatabase", "showStatus", "console",
    `${example("## Offline: a synced copy on the device")}\nreturn notes;`);
  const first = await run(alice.container, IndexedDBStorage, SyncedDatabase, (status) => statuses.push(status), console);
  assert.deepEqual(logged[0], ["n1", "hi"], `the note is in the copy at once: ${JSON.stringify(logged)}`);
  await eventually(async () => {
    try { return (await alice.container.privateDatabase.fetchRecord("Notes", "n1")).fields.text === "hi"; } catch { return false; }
  }, 30, "the README's note on the server");
  await eventually(() => first.pendingCount === 0, 30, "nothing waiting");
  await first.close();
  assert.ok(statuses.includes("Online") && !statuses.includes("Waiting for the server"), `statuses: ${statuses}`);

  // Opened again from what it stored: the note is there before any request, and nothing waits.
  const second = await SyncedDatabase.open({database: alice.container.privateDatabase, storage: new IndexedDBStorage(`notes:${alice.userRecordName}:private`), automaticallySync: false});
  assert.equal(second.record("Notes", "n1")?.fields.text, "hi");
  assert.equal(second.pendingCount, 0);
  await second.close();
  alice.container.close();
});

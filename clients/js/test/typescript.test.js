// Types from the schema (docs/TYPESCRIPT.md): `canopy schema typescript`
// writes declarations for Server/schema/app.ckdb; a program using them
// (typescript/typed-records.ts) compiles under `tsc --strict`, runs against
// a live gateway, and finds every value of the type its declaration says;
// a program misreading fields (typescript/typed-records-misuse.ts) is
// refused at exactly the lines it marks.

import assert from "node:assert/strict";
import {execFile} from "node:child_process";
import {readFileSync, writeFileSync} from "node:fs";
import {join} from "node:path";
import {after, before, test} from "node:test";
import {pathToFileURL} from "node:url";
import {promisify} from "node:util";
import {LiveServer, binary} from "./harness.js";
import {compile, compileProject, project, repositoryRoot} from "./typescript.js";

const run = promisify(execFile);
const source = (name) => readFileSync(new URL(`typescript/${name}`, import.meta.url), "utf8");

/** A project holding the two programs and the declarations the command wrote for Server/schema/app.ckdb. */
async function typedProject() {
  const directory = project({
    "typed-records.ts": source("typed-records.ts"),
    "typed-records-misuse.ts": source("typed-records-misuse.ts"),
  });
  const {stderr} = await run(binary, ["schema", "typescript", join(repositoryRoot, "Server/schema/app.ckdb"), "--output", join(directory, "canopy-records.d.ts")]);
  assert.match(stderr, /canopy-records\.d\.ts: 2 record types\n/);
  return directory;
}

let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

test("a program reading records of the schema's types compiles under --strict, and each value read is of its declared type", async () => {
  const directory = await typedProject();
  const compiled = await compile(directory, ["typed-records.ts", "canopy-records.d.ts"], {outDir: "out"});
  assert.ok(compiled.ok, `tsc --strict refused it:\n${compiled.output}`);
  const program = await import(pathToFileURL(join(directory, "out", "typed-records.js")).href);
  const alice = await server.user("typed");
  try {
    const problems = await program.run(alice.container, "Typed");
    assert.deepEqual(problems, [], "values read that are not of their declared type");
  } finally {
    alice.container.close();
  }
});

test("reading a field as the wrong type, or a field the type does not declare, does not compile", async () => {
  const directory = await typedProject();
  const compiled = await compile(directory, ["typed-records-misuse.ts", "canopy-records.d.ts"]);
  assert.equal(compiled.ok, false, "the misuses compiled");
  const lines = source("typed-records-misuse.ts").split("\n");
  const expected = lines.flatMap((line, index) => {
    const code = line.match(/\/\/ (TS\d+):/)?.[1];
    return code ? [`typed-records-misuse.ts(${index + 1},`, code] : [];
  });
  const reported = compiled.output.split("\n").filter((line) => line.includes("error TS"));
  for (let i = 0; i < expected.length; i += 2) {
    assert.ok(reported.some((line) => line.startsWith(expected[i]) && line.includes(`error ${expected[i + 1]}`)),
      `tsc did not report ${expected[i + 1]} at ${expected[i]}:\n${compiled.output}`);
  }
  assert.equal(reported.length, expected.length / 2, `tsc reported more than the marked lines:\n${compiled.output}`);
});

test("the command refuses a broken schema with its place, and writes nothing", async () => {
  const directory = project({"broken.ckdb": "DEFINE SCHEMA\n  RECORD TYPE Fast (\n    hours INT65\n  );\n"});
  await assert.rejects(
    run(binary, ["schema", "typescript", join(directory, "broken.ckdb"), "--output", join(directory, "out.d.ts")]),
    (error) => /broken\.ckdb:3:\d+: error: .*INT65/.test(error.stderr) || assert.fail(error.stderr));
  assert.throws(() => readFileSync(join(directory, "out.d.ts")), /ENOENT/);
});

test("the example app (Server/Examples/TodoWeb) compiles under tsc --strict with its schema's declarations, and those are what the command writes", async () => {
  const example = join(repositoryRoot, "Server/Examples/TodoWeb");
  const {stdout} = await run(binary, ["schema", "typescript", join(example, "schema.ckdb")]);
  assert.equal(readFileSync(join(example, "canopy-records.d.ts"), "utf8"), stdout,
    "Server/Examples/TodoWeb/canopy-records.d.ts is stale: canopy schema typescript Server/Examples/TodoWeb/schema.ckdb -o Server/Examples/TodoWeb/canopy-records.d.ts");
  const compiled = await compileProject(example);
  assert.ok(compiled.ok, `tsc -p Server/Examples/TodoWeb refused the app:\n${compiled.output}`);
});

/** The ```lang blocks of a page of docs/, in order. */
function docsBlocks(page, lang) {
  const text = readFileSync(join(repositoryRoot, "docs", page), "utf8");
  return [...text.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)\\n```", "g"))].map((match) => match[1]);
}

/** The first ```lang block of a page of docs/ that imports the package. */
function docsExample(page, lang) {
  const block = docsBlocks(page, lang).find((candidate) => candidate.includes('from "@canopy/client"'));
  assert.ok(block, `docs/${page} has a ${lang} example importing @canopy/client`);
  return block;
}

/** The section of a page of docs/ under `heading`, up to the next heading of its level. */
function docsSection(page, heading) {
  const text = readFileSync(join(repositoryRoot, "docs", page), "utf8");
  const start = text.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `docs/${page} has a section "${heading}"`);
  const level = heading.split(" ")[0];
  const end = text.indexOf(`\n${level} `, start + heading.length + 2);
  return text.slice(start, end < 0 ? undefined : end);
}

/** `file(line TSnnnn` for each line of `source` marked `// error TSnnnn`, as tsc's errors are compared. */
function markedErrors(file, source, firstLine = 1) {
  return source.split("\n").flatMap((line, index) => {
    const marked = /\/\/ error TS(\d+)/.exec(line);
    return marked ? [`${file}(${index + firstLine} TS${marked[1]}`] : [];
  });
}

test("the docs' examples compile: TYPESCRIPT.md's typed reads and typed writes (refused exactly at the lines they mark) and IDENTITY.md's sign-in", async () => {
  const typed = docsExample("TYPESCRIPT.md", "ts");
  const writesSection = docsSection("TYPESCRIPT.md", "## Typed writes");
  const writes = [...writesSection.matchAll(/```ts\n([\s\S]*?)\n```/g)].map((match) => match[1]);
  assert.equal(writes.length, 1, "TYPESCRIPT.md's Typed writes section has one ts example");
  // The writes example goes on from the reads: `db` as there, `notes` a SyncedDatabase. One line, so its lines keep their numbers + 1.
  const writesPrelude = `import {Container, SyncedDatabase} from "@canopy/client"; import type {Item} from "./canopy-records"; const db = new Container({baseURL, tokenProvider}).privateDatabase; declare const notes: SyncedDatabase;`;
  const signIn = docsExample("IDENTITY.md", "js");
  const directory = project({
    "typescript-example.ts": typed,
    "typed-writes-example.ts": `${writesPrelude}\n${writes[0]}`,
    "identity-example.ts": signIn,
    // What the examples leave to the app.
    "app-globals.d.ts": `
declare const baseURL: string;
declare const tokenProvider: import("@canopy/client").TokenProvider;
declare const recordName: string;
declare function render(user: unknown): void;
declare const button: HTMLButtonElement;
declare const signOut: HTMLButtonElement;
`,
  });
  const {stdout} = await run(binary, ["schema", "typescript", join(repositoryRoot, "Server/Examples/TodoWeb/schema.ckdb")]);
  writeFileSync(join(directory, "canopy-records.d.ts"), stdout);
  const compiled = await compile(directory, ["typescript-example.ts", "typed-writes-example.ts", "identity-example.ts", "app-globals.d.ts", "canopy-records.d.ts"]);
  const errors = compiled.output.split("\n").filter((line) => line.includes("error TS"));
  const expected = [...markedErrors("typescript-example.ts", typed), ...markedErrors("typed-writes-example.ts", writes[0], 2)];
  assert.equal(expected.length, 3, "the examples mark one misread and two miswritten fields");
  assert.deepEqual(errors.map((line) => line.replace(/,\d+\).*TS(\d+).*/, " TS$1")).sort(), expected.sort(),
    `only the examples' marked lines are refused:\n${compiled.output}`);
});

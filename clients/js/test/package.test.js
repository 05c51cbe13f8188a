// The package as an app gets it (issue 52, item 8): `npm pack` makes the
// tarball, which installs offline into an empty project, and the README's
// first page, its import line kept (`from "@canopy/client"`), runs from
// that project against a live gateway. The tarball holds exactly the
// modules, their declarations and the READMEs.

import assert from "node:assert/strict";
import {execFile} from "node:child_process";
import {mkdtempSync, readFileSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, test} from "node:test";
import {promisify} from "node:util";
import {LiveServer} from "./harness.js";
import {packageDirectory} from "./typescript.js";

const run = promisify(execFile);
let server;
before(async () => { server = await LiveServer.start(); });
after(async () => { await server?.stop(); });

test("npm pack's tarball installs offline into an empty project, and the README's first page runs from it as written", async () => {
  const directory = mkdtempSync(join(tmpdir(), "canopy-pack-"));
  const {stdout: packed} = await run("npm", ["pack", "--json", "--pack-destination", directory], {cwd: packageDirectory});
  const [tarball] = JSON.parse(packed);
  const files = tarball.files.map((file) => file.path).sort();
  assert.ok(files.includes("index.js") && files.includes("index.d.ts") && files.includes("file-storage.js") && files.includes("README.md"), files.join(" "));
  assert.ok(!files.some((file) => file.startsWith("test/")), `no tests in the package: ${files.join(" ")}`);

  const app = join(directory, "app");
  await run("mkdir", ["-p", app]);
  writeFileSync(join(app, "package.json"), JSON.stringify({name: "first-page", private: true, type: "module"}));
  // --offline: nothing may be fetched (the package has no dependencies).
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", join(directory, tarball.filename)], {cwd: app});
  const installed = JSON.parse(readFileSync(join(app, "node_modules/@canopy/client/package.json"), "utf8"));
  assert.equal(installed.name, "@canopy/client");

  const alice = await server.user("packed");
  const readme = readFileSync(join(packageDirectory, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## A first page"));
  const block = section.slice(section.indexOf("```js\n") + 6, section.indexOf("\n```", section.indexOf("```js\n")));
  const lines = block.split("\n");
  const imports = lines.filter((line) => line.startsWith("import "));
  assert.deepEqual(imports, ['import {Container, CanopyError, ErrorCode, Reference} from "@canopy/client";'], "the first page imports the package by its name");
  const body = lines.filter((line) => !line.startsWith("import ")).join("\n")
    .replaceAll("https://canopy.example.com", server.baseURL)
    .replace("setTimeout(() => stop.abort(), 60_000)", "setTimeout(() => stop.abort(), 3_000)");
  // What the page leaves to the app: where its token comes from.
  writeFileSync(join(app, "first-page.js"), `${imports.join("\n")}
const token = process.env.CANOPY_TOKEN;
const signInAgain = async () => token;
const storedToken = () => token;
try {
${body}
} catch (error) {
  if (error?.name !== "AbortError") throw error;   // the watch ends when its signal aborts
}
`);
  const {stdout} = await run(process.execPath, ["--experimental-websocket", "first-page.js"], {cwd: app, env: {...process.env, CANOPY_TOKEN: alice.token}});
  assert.match(stdout, /^Milk /m, `the query printed the item: ${stdout}`);
  assert.match(stdout, new RegExp(`send Bob ${server.baseURL.replace(/[.]/g, "\\.")}/share/`), stdout);
  assert.match(stdout, /^changed \[/m, stdout);
  alice.container.close();
});

// TypeScript's compiler (Debian's node-typescript, `tsc`) over programs that
// use CanopyJS as an app installs it: each in a folder of its own, with
// `node_modules/@canopy/client` pointing at this package, compiled with
// --strict. Used by typescript.test.js and readme-examples.test.js.

import {execFile} from "node:child_process";
import {mkdirSync, mkdtempSync, symlinkSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import {promisify} from "node:util";

const run = promisify(execFile);
export const packageDirectory = fileURLToPath(new URL("..", import.meta.url));
export const repositoryRoot = fileURLToPath(new URL("../../..", import.meta.url));
const tsc = process.env.CANOPY_TSC ?? "tsc";

/** The options every program is compiled with: strict, modern, for browsers (DOM) and Node alike. */
export const strictOptions = ["--strict", "--target", "es2022", "--module", "es2022", "--moduleResolution", "node", "--lib", "es2022,dom"];

/** A folder holding `files` ({name: text}) and CanopyJS installed as @canopy/client. */
export function project(files) {
  const directory = mkdtempSync(join(tmpdir(), "canopy-ts-"));
  mkdirSync(join(directory, "node_modules", "@canopy"), {recursive: true});
  symlinkSync(packageDirectory, join(directory, "node_modules", "@canopy", "client"), "dir");
  writeFileSync(join(directory, "package.json"), JSON.stringify({type: "module", private: true}));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(directory, name), text);
  return directory;
}

/** Compiles a project by its tsconfig.json (`tsc -p directory`); answers {ok, output}. */
export async function compileProject(directory) {
  try {
    const {stdout, stderr} = await run(tsc, ["-p", directory]);
    return {ok: true, output: stdout + stderr};
  } catch (error) {
    if (error.code === "ENOENT") throw new Error(`${tsc} is not installed (apt-get install node-typescript; scripts/ensure-node.sh does)`);
    return {ok: false, output: `${error.stdout ?? ""}${error.stderr ?? ""}`};
  }
}

/**
 * Compiles `names` in `directory` (--noEmit unless `outDir`); answers
 * {ok, output}, output being tsc's diagnostics. Throws when tsc is missing.
 */
export async function compile(directory, names, {outDir = null} = {}) {
  const args = [...strictOptions, ...(outDir ? ["--outDir", outDir] : ["--noEmit"]), ...names];
  try {
    const {stdout, stderr} = await run(tsc, args, {cwd: directory});
    return {ok: true, output: stdout + stderr};
  } catch (error) {
    if (error.code === "ENOENT") throw new Error(`${tsc} is not installed (apt-get install node-typescript; scripts/ensure-node.sh does)`);
    return {ok: false, output: `${error.stdout ?? ""}${error.stderr ?? ""}`};
  }
}

// A live `canopy serve` for the tests: the built executable (CANOPY_BIN) on
// the migrated database the Swift runner made (CANOPY_TEST_DATABASE_URL),
// on a free loopback port, with users made by `canopy users add`. Run by
// Server/Tests/StoryTests/CanopyKit/CanopyJSTests.swift; by hand:
//   CANOPY_BIN=.build/debug/canopy CANOPY_TEST_DATABASE_URL=postgres://… \
//   CANOPY_MIGRATIONS_DIR=migrations node --experimental-websocket --test clients/js/test/

import {execFile, spawn} from "node:child_process";
import {createServer} from "node:net";
import {promisify} from "node:util";
import {Container} from "../index.js";

const run = promisify(execFile);
export const binary = process.env.CANOPY_BIN;
export const databaseURL = process.env.CANOPY_TEST_DATABASE_URL;
const migrations = process.env.CANOPY_MIGRATIONS_DIR;
if (!binary || !databaseURL || !migrations) {
  throw new Error("set CANOPY_BIN, CANOPY_TEST_DATABASE_URL and CANOPY_MIGRATIONS_DIR (the Swift suite CanopyJSTests does)");
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => { const {port} = server.address(); server.close(() => resolve(port)); });
    server.on("error", reject);
  });
}

/** Waits for `condition()` to be truthy, every 50 ms, up to `seconds`. */
export async function eventually(condition, seconds = 20, what = "the condition") {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let names = 0;
/** A name no other test of this run uses. */
export function unique(prefix) {
  return `${prefix}${process.pid}x${++names}`;
}

export class LiveServer {
  constructor(port) {
    this.port = port;
    this.baseURL = `http://127.0.0.1:${port}`;
    this.process = null;
    this.output = "";
  }

  static async start(extra = []) {
    const server = new LiveServer(await freePort());
    await server.startProcess(extra);
    return server;
  }

  /** Starts (or restarts, on the same port) `canopy serve`. */
  async startProcess(extra = []) {
    const child = spawn(binary, ["serve", "--database-url", databaseURL, "--migrations-dir", migrations, "--port", String(this.port),
      "--public-url", this.baseURL, "--rate-limit", "0", "--outbound-allow", "127.0.0.0/8,::1,localhost", ...extra],
    {stdio: ["ignore", "pipe", "pipe"]});
    child.stdout.on("data", (chunk) => { this.output += chunk; });
    child.stderr.on("data", (chunk) => { this.output += chunk; });
    this.process = child;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    this.exited = exited;
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`canopy serve exited: ${this.output}`);
      try { return (await fetch(`${this.baseURL}/health`)).status === 200; } catch { return false; }
    }, 60, "canopy serve to answer /health");
  }

  /** Stops the gateway: SIGTERM (graceful) or SIGKILL (a crash). */
  async stop(signal = "SIGTERM") {
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    child.kill(signal);
    await this.exited;
    this.process = null;
  }

  /** A new user: {container, userRecordName, token, name}. */
  async user(prefix, {email} = {}) {
    const name = unique(prefix);
    const {stdout} = await run(binary, ["users", "add", name, "--json", "--database-url", databaseURL, ...(email ? ["--email", email] : [])]);
    const json = JSON.parse(stdout.trim().split("\n").filter((line) => line.startsWith("{")).pop());
    return {name, userRecordName: json.userRecordName, token: json.token, container: new Container({baseURL: this.baseURL, token: json.token})};
  }

  /** Another token for an existing user. */
  async token(name) {
    const {stdout} = await run(binary, ["users", "token", name, "--json", "--database-url", databaseURL]);
    return JSON.parse(stdout.trim().split("\n").filter((line) => line.startsWith("{")).pop()).token;
  }

  /** Revokes a token (as an expired sign-in looks to the server). */
  async revoke(token) {
    await run(binary, ["users", "revoke", token.slice(0, 20), "--database-url", databaseURL]);
  }

  /** Runs a `canopy` command against the database; answers its standard output. */
  async canopy(args) {
    const {stdout} = await run(binary, [...args, "--database-url", databaseURL]);
    return stdout;
  }

  /** Runs SQL as the administrator. */
  async administer(sql) {
    await run("psql", [databaseURL, "-v", "ON_ERROR_STOP=1", "-Atc", sql]);
  }
}

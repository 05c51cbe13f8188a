// The world a fault run breaks: a PostgreSQL cluster of its own (an
// embedded cluster in a fresh data directory, so restarting it disturbs no
// other test), `canopy serve` on it, and a TCP proxy on loopback that every
// device talks through, which can withhold an answer and kill the gateway
// the moment the answer starts: the commit happened, the answer is lost.
// Every write to canopy.records is logged by a trigger the run adds, so the
// check reads what the database itself did.

import {execFile, spawn} from "node:child_process";
import {chmodSync, mkdtempSync, rmSync} from "node:fs";
import {createServer, connect} from "node:net";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {promisify} from "node:util";

const run = promisify(execFile);

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => { const {port} = server.address(); server.close(() => resolve(port)); });
    server.on("error", reject);
  });
}

/** Waits `ms`; with a signal, rejects (and clears its timer) the moment it aborts. */
export const pause = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) { reject(signal.reason); return; }
  const stop = () => { clearTimeout(timer); reject(signal.reason); };
  const timer = setTimeout(() => { signal?.removeEventListener("abort", stop); resolve(); }, ms);
  signal?.addEventListener("abort", stop, {once: true});
});

/** Waits for `condition()` to be truthy, every 50 ms, up to `seconds` (or until `signal` aborts). */
export async function eventually(condition, seconds, what, signal) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    signal?.throwIfAborted();
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await pause(50, signal);
  }
}

/**
 * Forwards loopback connections to the gateway. `withholdNextWrite()` arms
 * it: the next request carrying a modifyRecords document has its answer
 * withheld, the gateway is killed as the answer starts, and the client's
 * connection is cut.
 */
class AnswerProxy {
  constructor(targetPort, onWithheld) {
    this.targetPort = targetPort;
    this.onWithheld = onWithheld;
    this.armed = false;
    this.sockets = new Set();
    this.withheld = 0;
  }

  async start() {
    this.port = await freePort();
    this.server = createServer((client) => this.accept(client));
    await new Promise((resolve) => this.server.listen(this.port, "127.0.0.1", resolve));
  }

  accept(client) {
    const upstream = connect(this.targetPort, "127.0.0.1");
    this.sockets.add(client); this.sockets.add(upstream);
    let victim = false;
    const end = () => { client.destroy(); upstream.destroy(); this.sockets.delete(client); this.sockets.delete(upstream); };
    client.on("data", (chunk) => {
      if (this.armed && chunk.includes("modifyRecords")) { this.armed = false; victim = true; }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (victim) {
        victim = false;
        this.withheld += 1;
        end();
        this.onWithheld();
        return;
      }
      client.write(chunk);
    });
    client.on("error", end); upstream.on("error", end);
    client.on("close", end); upstream.on("close", end);
  }

  withholdNextWrite() { this.armed = true; }

  /** Cuts every connection (as a gateway that died would). */
  cutAll() {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  async stop() {
    this.cutAll();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

export class FaultWorld {
  constructor({binary, migrations, log = () => {}}) {
    this.binary = binary;
    this.migrations = migrations;
    this.log = log;
    this.directory = mkdtempSync(join(tmpdir(), "canopy-fault-"));
    chmodSync(this.directory, 0o755);   // the server runs as postgres (as root), which must enter it
    this.gateway = null;
    this.output = "";
    // Aborted when the world closes: its restarts, pauses and commands end
    // with it. A command run after stop() would not just fail: canopy starts
    // the embedded cluster it is pointed at, so a late one (a restart, a
    // token asked for) would make a new cluster (and gateway) in the removed
    // directory, left running under the next seed.
    this.closing = new AbortController();
    this.commands = new Set();
  }

  get signal() { return this.closing.signal; }

  /** Ends everything the world does (stop() then takes it down). */
  close() {
    if (!this.signal.aborted) this.closing.abort(new Error("the fault world was stopped"));
  }

  /** Runs one of the world's commands, refused once it is closed; stop() waits for those under way. */
  command(start) {
    if (this.signal.aborted) return Promise.reject(this.signal.reason);
    const promise = start();
    this.commands.add(promise);
    promise.catch(() => {}).finally(() => this.commands.delete(promise));
    return promise;
  }

  canopy(args) {
    return this.command(() => run(this.binary, [...args, "--data-dir", this.directory], {maxBuffer: 16 << 20}));
  }

  async start() {
    await this.canopy(["cluster", "start"]);
    await this.canopy(["migrate", "up", "--migrations-dir", this.migrations]);
    await this.psql(`
      CREATE TABLE IF NOT EXISTS public.fault_writes (id bigserial PRIMARY KEY, op text NOT NULL, zone_id bigint NOT NULL,
        record_name text NOT NULL, fields jsonb);
      CREATE OR REPLACE FUNCTION public.fault_log() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
      BEGIN
        IF TG_OP = 'DELETE' THEN
          INSERT INTO public.fault_writes (op, zone_id, record_name, fields) VALUES ('delete', OLD.zone_id, OLD.record_name, NULL);
          RETURN OLD;
        END IF;
        INSERT INTO public.fault_writes (op, zone_id, record_name, fields) VALUES (lower(TG_OP), NEW.zone_id, NEW.record_name, NEW.fields);
        RETURN NEW;
      END $$;
      DROP TRIGGER IF EXISTS fault_log ON canopy.records;
      CREATE TRIGGER fault_log AFTER INSERT OR UPDATE OR DELETE ON canopy.records FOR EACH ROW EXECUTE FUNCTION public.fault_log();`);
    this.gatewayPort = await freePort();
    this.proxy = new AnswerProxy(this.gatewayPort, () => {
      this.log("gateway killed as it answered a write");
      if (this.gateway) this.gateway.killedOnPurpose = true;
      this.gateway?.kill("SIGKILL");
      // Back after a moment, as a supervisor would start it again.
      this.restarting = pause(300 + Math.floor(Math.random() * 1500), this.signal).then(() => this.ensureGateway())
        .catch((error) => { if (!this.signal.aborted) this.log(`restart failed: ${error}`); });
    });
    await this.proxy.start();
    this.baseURL = `http://127.0.0.1:${this.proxy.port}`;
    await this.startGateway();
  }

  /** psql as the administrator on the run's own cluster. */
  psql(sql) {
    return this.command(async () => {
      const {readFileSync} = await import("node:fs");
      const port = readFileSync(join(this.directory, "port"), "utf8").trim();
      const {stdout} = await run("psql", ["-h", join(this.directory, "run"), "-p", port, "-U", "canopy_admin", "-d", "canopy",
        "-v", "ON_ERROR_STOP=1", "-qAtc", sql], {maxBuffer: 64 << 20});
      return stdout;
    });
  }

  async startGateway() {
    this.signal.throwIfAborted();   // no gateway is started for a closed world
    const child = spawn(this.binary, ["serve", "--data-dir", this.directory, "--migrations-dir", this.migrations,
      "--port", String(this.gatewayPort), "--public-url", this.baseURL, "--rate-limit", "0", "--anonymous-rate-limit", "0",
      "--no-console", "--no-push", "--websocket-ping-interval", "2"], {stdio: ["ignore", "pipe", "pipe"]});
    child.stdout.on("data", (chunk) => { this.output = (this.output + chunk).slice(-20_000); });
    child.stderr.on("data", (chunk) => { this.output = (this.output + chunk).slice(-20_000); });
    this.gateway = child;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.exitedPromise = exited;
    try {
      await eventually(async () => {
        if (child.killedOnPurpose) return true;   // killed by a fault while it started: the next start is someone else's
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`canopy serve exited: ${this.output}`);
        try { return (await fetch(`http://127.0.0.1:${this.gatewayPort}/health`)).status === 200; } catch { return false; }
      }, 60, "canopy serve to answer /health", this.signal);
    } catch (error) {
      // A start that never answered is ended, so the next start is a fresh
      // one: left running, it would count as a running gateway that no
      // request can reach, and nothing would ever start another.
      if (child.exitCode === null && child.signalCode === null) {
        child.killedOnPurpose = true;
        child.kill("SIGKILL");
        await exited;
      }
      throw error;
    }
  }

  get gatewayRunning() {
    return this.gateway && this.gateway.exitCode === null && this.gateway.signalCode === null;
  }

  /** Kills the gateway (SIGKILL: a crash) and cuts its connections. */
  async killGateway() {
    const child = this.gateway;
    if (child) child.killedOnPurpose = true;
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await child?.exitedPromise;
    this.proxy.cutAll();
  }

  /**
   * Starts the gateway again if it is down (one start at a time). A start
   * that exits on its own (its connection cut by a PostgreSQL restart while
   * it checked the migrations) is tried again, as a supervisor would.
   */
  ensureGateway() {
    this.starting = (this.starting ?? Promise.resolve()).catch(() => {}).then(async () => {
      for (let attempt = 1; ; attempt++) {
        this.signal.throwIfAborted();
        if (this.gatewayRunning) return;
        await this.gateway?.exitedPromise;
        try {
          await this.startGateway();
          return;
        } catch (error) {
          if (attempt >= 10 || this.signal.aborted) throw error;
          this.log(`the gateway exited while starting (attempt ${attempt}), started again: ${String(error.message).split("\n").slice(-2).join(" ")}`);
          await pause(1000, this.signal);
        }
      }
    });
    return this.starting;
  }

  async restartPostgres() {
    await this.canopy(["cluster", "stop"]);
    await this.canopy(["cluster", "start"]);
  }

  /** A new user: {name, token, userRecordName}. */
  async user(name, email) {
    const {stdout} = await this.canopy(["users", "add", name, "--json", ...(email ? ["--email", email] : [])]);
    return {...JSON.parse(stdout.trim().split("\n").filter((line) => line.startsWith("{")).pop()), name};
  }

  async token(name) {
    const {stdout} = await this.canopy(["users", "token", name, "--json"]);
    return JSON.parse(stdout.trim().split("\n").filter((line) => line.startsWith("{")).pop()).token;
  }

  /** Revokes a token; one revoked already (its device has not asked for a new one yet) stays so. */
  async revoke(token) {
    try {
      await this.canopy(["users", "revoke", token.slice(0, 20)]);
    } catch (error) {
      if (!String(error.stderr ?? error.message).includes("no live token")) throw error;
    }
  }

  /** Change tokens sealed before now are refused from the next gateway start (CHANGE_TOKEN_EXPIRED). */
  async expireChangeTokens() {
    await this.psql("SELECT canopy.retire_server_secret('change-token')");
  }

  async stop() {
    this.close();
    // What was under way ends first (a start spawns no gateway after this, a
    // command is not cut off half-way), then the gateway, the proxy and the cluster go.
    await Promise.allSettled([this.starting, this.restarting, ...this.commands]);
    await this.killGateway().catch(() => {});
    await this.proxy?.stop().catch(() => {});
    await run(this.binary, ["cluster", "stop", "--data-dir", this.directory]).catch(() => {});
    rmSync(this.directory, {recursive: true, force: true});
  }
}

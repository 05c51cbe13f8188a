// The randomized fault run for CanopyJS's SyncEngine (issue 50). A seeded
// driver runs three devices, two people sharing a zone and one of them on
// two devices, each an app in a process of its own (device.js), through a
// random sequence of edits and deletes interleaved with faults: the gateway
// killed as it answers a write (the commit happened, the answer is lost)
// or at any moment, away for longer than every retry; a device killed right
// after queuing, mid-send, or as the answer arrives, and started again from
// what it stored; PostgreSQL restarted; change tokens expired; a token
// revoked and a new one issued. Then it heals everything and checks the
// property against the database:
//
// - every edit a device reported as queued is on the server, or was
//   followed by a later edit of the same device to the same field (which
//   is then there): a device's field holds its last queued value, or a
//   value it queued after (whose "queued" the kill may have eaten);
// - nothing is applied twice or out of order: in the log of every write
//   to the zone's records (a trigger's), each device's field only grows;
// - every device's local copy equals the server's records.
//
// A failure names its seed; `node clients/js/test/fault/run.js --seed N`
// reproduces it. Each device writes only its own field (f_<device>), so
// the property is exact whatever order concurrent edits commit in.
//
//   node --experimental-websocket clients/js/test/fault/run.js --seeds 1-20 --steps 60
// with CANOPY_BIN and CANOPY_MIGRATIONS_DIR set (make fault does).

import {fork, spawn} from "node:child_process";
import {createInterface} from "node:readline";
import {rmSync} from "node:fs";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";
import {Container} from "../../index.js";
import {FaultWorld, eventually, pause} from "./world.js";

const here = dirname(fileURLToPath(import.meta.url));

/** A small, seeded generator (mulberry32): the same seed, the same run. */
export function random(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6D2B79F5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (n) => Math.floor(next() * n);
  next.pick = (list) => list[next.int(list.length)];
  return next;
}

/**
 * A device process: device.js (CanopyJS, Node's IPC channel) or the
 * canopykit-fault-device executable (CanopyKit, the same messages as JSON
 * lines on stdin and stdout), so one driver puts both engines through the
 * same faults.
 */
export class Device {
  constructor(world, {name, user, scope, zone, log, engine = "js", swiftDevice}) {
    this.world = world;
    this.name = name;
    this.engine = engine;
    this.swiftDevice = swiftDevice;
    this.user = user;
    this.scope = scope;
    this.zone = zone;
    this.field = `f_${name}`;
    this.file = join(world.directory, `${name}.json`);
    this.log = log;
    this.token = user.token;
    this.waiting = new Map();
    this.nextID = 1;
    this.failures = [];
    this.errors = [];
    this.status = {pending: 0, reachable: null};
    this.kills = 0;
    this.tasks = new Set();
  }

  /** extra: {dieMidRange: k}: die at the k-th state stored while a first sync in ranges is under way. */
  start(extra = {}) {
    // A death mid-range that another fault pre-empted (the device killed
    // before its first sync stored a range: seed 2 under load, once) stays
    // armed for its next start, at the first range state stored then; the
    // run still checks an interrupted first sync. No draw of the seed's.
    if ("dieMidRange" in extra) this.armedMidRange = extra.dieMidRange;
    else if (this.armedMidRange) extra = {...extra, dieMidRange: 1};
    const options = JSON.stringify({name: this.name, baseURL: this.world.baseURL, scope: this.scope,
      zone: this.zone, file: this.file, field: this.field, token: this.token, ...extra});
    let child;
    if (this.engine === "swift") {
      child = spawn(this.swiftDevice, [options], {stdio: ["pipe", "pipe", "pipe"]});
      const lines = createInterface({input: child.stdout});
      lines.on("line", (line) => {
        let message;
        try { message = JSON.parse(line); } catch { this.stderr = (this.stderr + `stdout: ${line}\n`).slice(-4000); return; }
        child.emit("message", message);
      });
      child.stdin.on("error", () => { /* died */ });
      this.post = (message) => child.stdin.write(`${JSON.stringify(message)}\n`);
    } else {
      child = fork(join(here, "device.js"), [options],
        {execArgv: ["--experimental-websocket", "--no-warnings"], stdio: ["ignore", "ignore", "pipe", "ipc"]});
      this.post = (message) => child.send(message);
    }
    this.child = child;
    // A message to a process that just died fails as an 'error' event: the exit handles it.
    child.on("error", () => {});
    this.stderr = "";
    child.stderr.on("data", (chunk) => { this.stderr = (this.stderr + chunk).slice(-4000); });
    const ready = new Promise((resolve, reject) => {
      // A device armed to die mid-range may do so before it says it is
      // ready (its engine starts syncing at once; seed 20, mixed, on a
      // loaded machine): that death is the planned one, and the run
      // starts it again as any device found dead.
      let diedMidRange = false;
      child.on("message", (message) => {
        if (message.type === "ready") resolve();
        if (message.type === "dyingMidRange") diedMidRange = true;
        this.receive(message);
      });
      // "close": after the last line it wrote was read, so a "dyingMidRange" is seen.
      child.once("close", (code, signal) => {
        if (diedMidRange) resolve();
        else reject(new Error(`device ${this.name} exited before it was ready (${code ?? signal}): ${this.stderr}`));
        for (const [, {reject: fail}] of this.waiting) fail(new Error(`device ${this.name} died`));
        this.waiting.clear();
      });
    });
    this.exited = new Promise((resolve) => child.once("exit", resolve));
    return ready;
  }

  receive(message) {
    switch (message.type) {
    case "queued": case "settled": case "statusAnswer": {
      const waiter = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      waiter?.resolve(message);
      break;
    }
    case "status": this.status = message; break;
    case "dyingMidRange": this.midRangeDeaths = (this.midRangeDeaths ?? 0) + 1; this.armedMidRange = 0; this.log(`${this.name} dies mid-range`); break;
    case "stuck": this.log(`${this.name} has not settled in 45 s: ${JSON.stringify(message).slice(0, 1500)}`); break;
    case "failure": this.failures.push(message); this.log(`${this.name}: ${message.what} failed: ${message.code} ${message.message}`); break;
    case "engineError": this.errors.push(message); break;
    case "trace": this.log(`${this.name}: ${message.text}`); break;   // a CanopyKit device: its own records changed, a zone-level event, its hold on the zone
    case "needToken": {
      // Tracked, so stop() waits for it; one asked for as the world stops fails quietly.
      const task = this.world.token(this.user.name).then((token) => {
        this.token = token;
        try { this.post({type: "token", token}); } catch { /* died meanwhile */ }
      }).catch((error) => this.log(`${this.name}: no new token: ${error?.message ?? error}`));
      this.tasks.add(task);
      task.finally(() => this.tasks.delete(task));
      break;
    }
    }
  }

  get alive() { return this.child && this.child.exitCode === null && this.child.signalCode === null; }

  /** Sends a command and waits for its answer (rejects if the device dies first). */
  ask(message) {
    const id = this.nextID++;
    const slow = setTimeout(() => this.log(`${this.name} has not answered ${message.type} ${message.recordName ?? ""} in 30 s`), 30_000);
    return new Promise((resolve, reject) => {
      if (!this.alive) { reject(new Error(`device ${this.name} is not running`)); return; }
      this.waiting.set(id, {resolve, reject});
      try { this.post({...message, id}); } catch (error) { this.waiting.delete(id); reject(error); }
    }).finally(() => clearTimeout(slow));
  }

  tell(message) {
    try { this.post(message); } catch { /* dead */ }
  }

  async kill() {
    if (!this.alive) return;
    this.kills += 1;
    this.child.kill("SIGKILL");
    await this.exited;
  }

  async stop() {
    if (this.alive) {
      this.tell({type: "stop"});
      // The 10 s limit's timer is cleared, not left to run into the next seed.
      const limit = new AbortController();
      await Promise.race([this.exited, pause(10_000, limit.signal).then(() => this.child.kill("SIGKILL"), () => {})]);
      limit.abort();
    }
    await Promise.allSettled(this.tasks);
  }
}

/**
 * One run: `steps` operations and faults chosen by `seed`. Answers
 * {seed, ok, problems, counts, log}; throws only when the world cannot be
 * set up.
 */
export async function runSeed(seed, {steps = 40, binary, migrations, verbose = false, engines = "js"} = {}) {
  const rng = random(seed);
  const log = [];
  const note = (text) => { log.push(`[${(performance.now() / 1000).toFixed(1)}] ${text}`); if (verbose) console.log(`seed ${seed}: ${text}`); };
  const world = new FaultWorld({binary, migrations, log: note});
  // The seed's life: everything it starts ends with it, so the next seed (in
  // the same process) runs alone. world.signal aborts in the teardown: every
  // retry loop and pause below ends at it, and what runs in the background
  // (zone faults, gateway restarts) is kept here and waited for.
  const {signal} = world;
  const background = new Set();
  const inBackground = (promise) => {
    background.add(promise);
    // Handled here so that a failure is not an unhandled rejection, which
    // kills the process wherever it lands (outside runSeed, maybe in a later
    // seed): the heal awaits each of these, and a failure fails this seed there.
    promise.catch(() => {}).finally(() => background.delete(promise));
    return promise;
  };
  const devices = [];
  const apis = [];
  const counts = {};
  const count = (what) => { counts[what] = (counts[what] ?? 0) + 1; };
  const problems = [];
  try {
    await world.start();
    const bobEmail = `bob${seed}@example.com`;
    const alice = await world.user("alice"), bob = await world.user("bob", bobEmail);
    const zoneName = "Together";
    // Alice's devices spell her zone with her record name, as an app may;
    // each engine names it its own way (canonically), as its answers do.
    const zoneForOwner = {zoneName, ownerName: alice.userRecordName}, zoneForBob = {zoneName, ownerName: alice.userRecordName};
    // The people themselves, for what is not a device's sync (making,
    // sharing, deleting the zone; leaving it), with tokens no fault revokes.
    const aliceAPI = new Container({baseURL: world.baseURL, token: await world.token(alice.name), requestTimeout: 15_000});
    const bobAPI = new Container({baseURL: world.baseURL, token: await world.token(bob.name), requestTimeout: 15_000});
    apis.push(aliceAPI, bobAPI);
    /**
     * Runs a person's request until the gateway answers it (a fault may have
     * it away). Refused after an attempt whose answer was lost, the request
     * is taken as done by that attempt (removing Bob twice, deleting a zone
     * twice).
     */
    const api = async (what, request) => {
      // A deadline, not a count of tries: a gateway started again on a
      // loaded machine can take tens of seconds to listen (its process is
      // up, so ensureGateway returns at once), and 60 tries of half a
      // second once gave up on one (docs/TESTING.md: a minute or more).
      const deadline = Date.now() + 180_000;
      for (let attempt = 0; ; attempt++) {
        signal.throwIfAborted();   // the seed is over: no more tries
        try { return await request(); } catch (error) {
          // A statement past its timeout rolled back: tried again, as a person
          // would (deleting the zone's 2,000 records took longer than 10 s once,
          // seed 34, swift, beside a CI build and two other runs).
          const timedOut = error?.code === "LIMIT_EXCEEDED" && /statement timeout/.test(error?.message ?? "");
          const away = error?.code === "NETWORK_FAILURE" || error?.code === "SERVICE_UNAVAILABLE" || error?.isRetryable || timedOut;
          if (!away && attempt > 0) { note(`${what}: refused when tried again (${error?.code}): done the first time`); return null; }
          if (!away || Date.now() > deadline) throw new Error(`${what}: ${error?.code ?? ""} ${error?.message ?? error} (tried ${attempt + 1} times)`);
          await world.ensureGateway().catch(() => {});
          await pause(500, signal);
        }
      }
    };
    /** The zone exists and is shared with Bob, who accepted: what each zone fault ends in. */
    const shareWithBob = async () => {
      await api("make the zone", () => aliceAPI.privateDatabase.saveZone(zoneName));
      const share = await api("read the share", () => aliceAPI.privateDatabase.share(zoneName));
      const invited = share?.participants.some((person) => (person.email ?? person.user?.email) === bobEmail);
      const shared = share && invited ? share
        : share ? await api("invite Bob", () => aliceAPI.privateDatabase.setParticipant(zoneName, {email: bobEmail, permission: "READ_WRITE"}))
        : await api("share the zone", () => aliceAPI.privateDatabase.saveShare(zoneName, {participants: [{email: bobEmail, permission: "READ_WRITE"}]}));
      await api("Bob accepts", () => bobAPI.acceptShare(shared.url));
    };
    await shareWithBob();
    // Records no device edits, so that a first sync is many pages read in
    // ranges (devices page by 50, 4 ranges at once), and that Alice's
    // churn below lands while ranges are read.
    let filled = 0;
    const fill = async (count) => {
      for (let start = 0; start < count; start += 400) {
        const save = Array.from({length: Math.min(400, count - start)}, (_, i) => ({recordName: `fill-${filled + start + i}`, recordType: "Fill", fields: {n: start + i}}));
        await api("fill the zone", () => aliceAPI.privateDatabase.modify(zoneName, {save, savePolicy: "ALL_KEYS", atomic: false}));
      }
      filled += count;
    };
    await fill(1500);
    // Alice's laptop and phone (each with a token of its own), and Bob.
    const phone = {...alice, token: await world.token(alice.name)};
    // Which engine each device runs: all CanopyJS, all CanopyKit, or mixed
    // (the laptop and Bob on CanopyKit, the phone on CanopyJS).
    const engineOf = (name) => engines === "mixed" ? (name === "phone" ? "js" : "swift") : engines;
    const swiftDevice = join(dirname(binary), "canopykit-fault-device");
    const device = (name, user, scope, zone) => new Device(world, {name, user, scope, zone, log: note, engine: engineOf(name), swiftDevice});
    devices.push(device("laptop", alice, "PRIVATE", zoneForOwner));
    devices.push(device("phone", phone, "PRIVATE", zoneForOwner));
    devices.push(device("bob", bob, "SHARED", zoneForBob));
    // Every device's first sync is of the 1,500 records, in ranges; one of
    // them, chosen by the seed, dies mid-range (at the first state it stores
    // with ranges under way: a later one was, once in a loaded run, after
    // the sync had finished, and the run then had no interruption to check)
    // and carries on from its file. Later starts over die at the 1st to 6th.
    const interrupted = rng.pick(devices);
    rng.int(6);   // the draw the die point took, so each seed's later steps stay as they were
    for (const device of devices) await device.start(device === interrupted ? {dieMidRange: 1} : {});
    count("device set to die mid-range");

    // What each device reported queued, in order: recordName → [{value | deleted}].
    const queued = new Map(devices.map((device) => [device.name, new Map()]));
    // What each device was asked to do, queued or not (a kill may eat the answer).
    const asked = new Map(devices.map((device) => [device.name, new Map()]));
    // Zone faults (the zone unshared, left, deleted) cut devices off for a
    // while. Each device counts the cuts' starts and ends: an edit queued
    // while cut off, or before a cut it was not yet sent across, may be
    // refused (ZONE_NOT_FOUND, PERMISSION_FAILURE, UNKNOWN_ITEM) or go with a deleted
    // zone; one queued after the last cut ended may not.
    const epoch = new Map(devices.map((device) => [device.name, 0]));
    // (UNKNOWN_ITEM: a save of a record that went with a deleted zone.)
    const refusable = new Set(["ZONE_NOT_FOUND", "PERMISSION_FAILURE", "UNKNOWN_ITEM"]);
    let zoneFault = Promise.resolve();
    const cut = (names, what, undo) => {
      for (const name of names) epoch.set(name, epoch.get(name) + 1);
      count(what);
      note(`${what}: ${names.join(", ")} cut off`);
      const after = 200 + rng.int(3000);
      zoneFault = inBackground(zoneFault.then(() => pause(after, signal)).then(undo).then(() => {
        for (const name of names) epoch.set(name, epoch.get(name) + 1);
        note(`${what}: over`);
      }));
      return zoneFault;
    };
    let value = 0;
    const shared = ["milk", "eggs", "bread", "tea"];
    // Every restart is kept (a later one replaces gatewayComing, not the earlier one's timer).
    const restarts = [];
    const restartLater = (ms) => { const restart = inBackground(pause(ms, signal).then(() => world.ensureGateway())); restarts.push(restart); return restart; };
    let gatewayComing = null;

    for (let step = 0; step < steps; step++) {
      const device = rng.pick(devices);
      const roll = rng();
      if (!device.alive) { await device.start(); note(`${device.name} started again from what it stored`); }
      if (roll < 0.55) {
        // An edit: a shared record or one of the device's own.
        const own = rng() < 0.4;
        const recordName = own ? `${device.name}-${rng.int(3)}` : rng.pick(shared);
        const operation = own && rng() < 0.25 ? {type: "delete", recordName} : {type: "edit", recordName, value: ++value};
        const list = asked.get(device.name).get(recordName) ?? [];
        list.push(operation.type === "delete" ? {deleted: true} : {value: operation.value});
        asked.get(device.name).set(recordName, list);
        const killAfterQueue = rng() < 0.08, killInFlight = !killAfterQueue && rng() < 0.08, killOnAnswer = !killAfterQueue && !killInFlight && rng() < 0.06;
        if (killInFlight) device.tell({type: "dieWhenInFlight"});
        if (killOnAnswer) device.tell({type: "dieOnAnswer"});
        const queuedIn = epoch.get(device.name);
        try {
          await device.ask(operation);
          const done = queued.get(device.name).get(recordName) ?? [];
          done.push(operation.type === "delete" ? {deleted: true, epoch: queuedIn} : {value: operation.value, epoch: queuedIn});
          queued.get(device.name).set(recordName, done);
          count(operation.type);
        } catch {
          note(`${device.name} died before it said ${operation.type} ${recordName} was queued`);
        }
        if (killAfterQueue) { await device.kill(); count("device killed after queuing"); note(`${device.name} killed right after queuing`); }
        if (killInFlight) count("device set to die mid-send");
        if (killOnAnswer) count("device set to die as the answer arrives");
      } else if (roll < 0.62) {
        world.proxy.withholdNextWrite();
        count("gateway killed as it answers a write");
        gatewayComing = restartLater(200 + rng.int(2500));
      } else if (roll < 0.67) {
        await world.killGateway();
        count("gateway killed");
        note("gateway killed");
        gatewayComing = restartLater(100 + rng.int(1500));
      } else if (roll < 0.70) {
        await world.killGateway();
        count("gateway away longer than the retries");
        note("gateway away for 6 s");
        gatewayComing = restartLater(6000);
        await gatewayComing;
      } else if (roll < 0.73) {
        await world.restartPostgres();
        count("PostgreSQL restarted");
        note("PostgreSQL restarted");
      } else if (roll < 0.75) {
        await world.expireChangeTokens();
        await world.killGateway();
        await world.ensureGateway();
        count("change tokens expired");
        note("change tokens expired (secret retired, gateway restarted)");
      } else if (roll < 0.78) {
        await world.revoke(device.token);
        count("token revoked");
        note(`${device.name}'s token revoked`);
      } else if (roll < 0.82) {
        await device.kill();
        count("device killed");
        note(`${device.name} killed`);
      } else if (roll < 0.84 && epoch.get("bob") % 2 === 0) {
        // Alice stops sharing with Bob, and shares again a moment later.
        await api("remove Bob", () => aliceAPI.privateDatabase.removeParticipant(zoneName, {email: bobEmail}));
        cut(["bob"], "Bob removed from the share", shareWithBob);
      } else if (roll < 0.86 && epoch.get("bob") % 2 === 0) {
        // Bob leaves the zone, and is invited and accepts again a moment later.
        await api("Bob leaves", () => bobAPI.sharedDatabase.leaveShare(zoneForBob));
        cut(["bob"], "Bob left the share", shareWithBob);
      } else if (roll < 0.875 && devices.every((each) => epoch.get(each.name) % 2 === 0)) {
        // Alice deletes the zone from another device; it is made and shared again a moment later.
        await api("delete the zone", () => aliceAPI.privateDatabase.deleteZone(zoneName));
        cut(devices.map((each) => each.name), "the zone deleted", () => shareWithBob().then(() => fill(600)));
      } else if (roll < 0.905 && device.alive && !(await device.ask({type: "status"}).catch(() => ({pending: true}))).pending) {
        // A new install: nothing waits on the device (a fresh install has no
        // edits of its own to lose), its file goes, and it syncs the zone
        // from nothing, in ranges; half the time it dies mid-range and
        // carries on from what it stored.
        await device.kill();
        rmSync(device.file, {force: true});
        const dieMidRange = rng() < 0.75 ? 1 + rng.int(6) : 0;
        if (!dieMidRange) device.armedMidRange = 0;
        await device.start(dieMidRange ? {dieMidRange} : {});
        count("device started over");
        if (dieMidRange) count("device set to die mid-range");
        note(`${device.name} started over from nothing${dieMidRange ? `, to die at the ${dieMidRange}th state stored mid-range` : ""}`);
      } else if (roll < 0.945) {
        // Alice's own requests change, delete and add records no device edits, while devices may be reading ranges.
        const save = Array.from({length: 4}, () => ({recordName: `fill-${rng.int(filled + 20)}`, recordType: "Fill", fields: {n: -(++value)}}));
        const names = new Set(save.map((record) => record.recordName));
        const remove = [`fill-${rng.int(filled)}`, `fill-${rng.int(filled)}`].filter((name) => !names.has(name));
        if (epoch.get("laptop") % 2 === 0) {
          await api("churn", () => aliceAPI.privateDatabase.modify(zoneName, {save, delete: [...new Set(remove)], savePolicy: "ALL_KEYS", atomic: false}));
          count("Alice's churn");
        }
      } else {
        await pause(rng.int(400));
      }
      await pause(rng.int(120));
    }

    // Heal: the gateway up and every device running; then each engine must
    // send everything by itself (nobody edits, nobody calls send), however
    // long the server was away: a stranded queue fails here.
    await Promise.all(restarts);
    await world.restarting;
    await world.ensureGateway();
    await zoneFault;
    for (const device of devices) if (!device.alive) await device.start();
    try {
      await eventually(async () => {
        for (const device of devices) {
          if (!device.alive) await device.start();
          const answer = await device.ask({type: "status"}).catch(() => ({pending: true}));
          if (answer.pending) return false;
        }
        return true;
      }, 150, "every engine to send what waited, by itself, after the faults healed");
    } catch (error) {
      problems.push(`${error.message}: ${devices.map((device) => `${device.name} ${JSON.stringify(device.status)}`).join(", ")}`);
    }
    let stores;
    await eventually(async () => {
      await world.ensureGateway();
      stores = [];
      for (const device of devices) {
        if (!device.alive) await device.start();
        const answer = await device.ask({type: "settle"}).catch((error) => ({error: String(error), hasPending: true}));
        if (answer.error || answer.hasPending) return false;
        stores.push(answer.records);
      }
      // A second pass after everyone sent, so each has fetched the others' last writes.
      stores = [];
      for (const device of devices) {
        const answer = await device.ask({type: "settle"});
        if (answer.error || answer.hasPending) return false;
        stores.push(answer.records);
      }
      return true;
    }, 240, "every device to have sent everything and fetched the rest");

    // The server's records and the log of every write, from the database.
    const zoneID = (await world.psql(`SELECT z.id FROM canopy.zones z JOIN canopy.users u ON u.id = z.owner_id WHERE z.name = '${zoneName}' AND u.record_name = '${alice.userRecordName}'`)).trim();
    const server = Object.fromEntries((await world.psql(`SELECT record_name || E'\\t' || fields::text FROM canopy.records WHERE zone_id = ${zoneID} ORDER BY record_name`))
      .split("\n").filter(Boolean).map((line) => { const [name, fields] = line.split("\t"); return [name, JSON.parse(fields)]; }));
    // Every write of the run, in every zone the run made (a deleted zone's too).
    const writes = (await world.psql(`SELECT zone_id || E'\\t' || op || E'\\t' || record_name || E'\\t' || coalesce(fields::text, 'null') FROM public.fault_writes ORDER BY id`))
      .split("\n").filter(Boolean).map((line) => { const [zone, op, name, fields] = line.split("\t"); return {zone, op, name, fields: JSON.parse(fields)}; });

    // 1. Each device's field holds its last queued value, or one it asked for after.
    for (const device of devices) {
      for (const [recordName, done] of queued.get(device.name)) {
        const last = done[done.length - 1];
        const all = asked.get(device.name).get(recordName);
        const later = all.slice(all.findLastIndex((item) => last.deleted ? item.deleted : item.value === last.value));
        const now = server[recordName]?.[device.field];
        const cutSince = last.epoch !== epoch.get(device.name);
        // Across a cut, any value the device asked for, or none (refused, or gone with the zone).
        const allowed = cutSince ? now === undefined || all.some((item) => item.value === now)
          : later.some((item) => item.deleted ? !(recordName in server) : item.value === now);
        if (!allowed) {
          problems.push(`${recordName}.${device.field} is ${JSON.stringify(now)} on the server; ${device.name} last queued ${JSON.stringify(last)}` +
            ` (and asked for ${JSON.stringify(later.slice(1))} after)`);
        }
      }
    }
    // 2. No write applied twice or out of order: each device's field only grows in the log, zone by zone.
    const highest = new Map();
    for (const write of writes) {
      if (write.op === "delete") continue;
      for (const device of devices) {
        const number = write.fields?.[device.field];
        if (typeof number !== "number") continue;
        const key = `${write.name}.${device.field}` + (write.zone === zoneID ? "" : ` (in deleted zone ${write.zone})`);
        if (number < (highest.get(key) ?? -Infinity)) {
          problems.push(`${key} went back from ${highest.get(key)} to ${number}: a stale write applied again`);
        }
        highest.set(key, Math.max(number, highest.get(key) ?? -Infinity));
      }
    }
    // 3. Every local copy equals the server's records.
    const canonical = (records) => JSON.stringify(Object.keys(records).sort().map((name) => [name, Object.keys(records[name]).sort().map((key) => [key, records[name][key]])]));
    devices.forEach((device, index) => {
      if (canonical(stores[index]) !== canonical(server)) {
        problems.push(`${device.name}'s local copy differs from the server: ${canonical(stores[index])} against ${canonical(server)}`);
      }
    });
    for (const device of devices) {
      for (const failure of device.failures) {
        // A zone fault refuses what was sent across it; nothing else may be refused.
        if (epoch.get(device.name) > 0 && refusable.has(failure.code)) { count("refused across a zone fault"); continue; }
        problems.push(`${device.name}: ${failure.what} was refused: ${failure.code} ${failure.message}`);
      }
    }
    counts["first syncs interrupted mid-range"] = devices.reduce((sum, device) => sum + (device.midRangeDeaths ?? 0), 0);
    counts.writes = writes.length;
    counts.records = Object.keys(server).length;
    counts["answers withheld"] = world.proxy.withheld;
    return {seed, ok: problems.length === 0, problems, counts, log};
  } finally {
    world.close();   // aborts `signal`: every loop and pause of this seed ends
    for (const container of apis) container.close();
    for (const device of devices) await device.stop().catch(() => {});
    await world.stop().catch(() => {});
    await Promise.allSettled(background);
    rmSync(world.directory, {recursive: true, force: true});
  }
}

// As a program: node run.js --seeds 1-20 --steps 60 [--engines js|swift|mixed] [--verbose]
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argument = (name, fallback) => { const index = process.argv.indexOf(name); return index < 0 ? fallback : process.argv[index + 1]; };
  const [first, last] = (argument("--seeds", argument("--seed", "1"))).split("-").map(Number);
  const steps = Number(argument("--steps", "60"));
  const engines = argument("--engines", "js");
  if (!["js", "swift", "mixed"].includes(engines)) { console.error("--engines is js, swift or mixed"); process.exit(2); }
  const binary = process.env.CANOPY_BIN, migrations = process.env.CANOPY_MIGRATIONS_DIR;
  if (!binary || !migrations) { console.error("set CANOPY_BIN and CANOPY_MIGRATIONS_DIR"); process.exit(2); }
  let failed = 0;
  for (let seed = first; seed <= (last ?? first); seed++) {
    const started = Date.now();
    // A seed that throws fails as itself, and the next seeds still run.
    const result = await runSeed(seed, {steps, binary, migrations, engines, verbose: process.argv.includes("--verbose")})
      .catch((error) => ({seed, ok: false, problems: [`the run threw: ${error?.stack ?? error}`], counts: {}, log: []}));
    console.log(`seed ${seed} (${engines}): ${result.ok ? "ok" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(0)} s ${JSON.stringify(result.counts)}`);
    if (!result.ok) {
      failed += 1;
      for (const problem of result.problems) console.log(`  ${problem}`);
      console.log(`  log:\n    ${result.log.join("\n    ")}`);
      console.log(`  reproduce: node --experimental-websocket clients/js/test/fault/run.js --seed ${seed} --steps ${steps} --engines ${engines}`);
    }
  }
  process.exit(failed ? 1 : 0);
}

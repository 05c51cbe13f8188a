// The randomized fault run (fault/run.js) for a few seeds, as part of the
// suite: three devices syncing one shared zone through gateways killed as
// they answer, processes killed mid-send and mid-way through a first sync
// in ranges, PostgreSQL restarted, expired
// change tokens and revoked tokens; then every queued edit on the server
// once, and every local copy equal to it. make test runs each seed with
// both engines' devices in one world (mixed: CanopyJS devices and CanopyKit
// devices, canopykit-fault-device built beside the canopy binary), three
// seeds in one process; `make fault` runs many more seeds with each mix
// (js, swift, mixed). CANOPY_FAULT_SEEDS ("1-3"), CANOPY_FAULT_STEPS and
// CANOPY_FAULT_ENGINES ("mixed"; "js,swift,mixed" for all) choose here.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {binary} from "./harness.js";
import {runSeed} from "./fault/run.js";

const [first, last] = (process.env.CANOPY_FAULT_SEEDS ?? "1-3").split("-").map(Number);
const steps = Number(process.env.CANOPY_FAULT_STEPS ?? "30");
const engines = (process.env.CANOPY_FAULT_ENGINES ?? "mixed").split(",");

describe("SyncEngines under faults (randomized, seeded)", () => {
  for (const engine of engines) {
    for (let seed = first; seed <= (last ?? first); seed++) {
      test(`${engine} devices, seed ${seed}: ${steps} steps of edits and faults lose no queued edit and apply none twice`, {timeout: 600_000}, async () => {
        const result = await runSeed(seed, {steps, binary, migrations: process.env.CANOPY_MIGRATIONS_DIR, engines: engine});
        assert.ok(result.ok, `seed ${seed} failed (reproduce: node --experimental-websocket clients/js/test/fault/run.js --seed ${seed} --steps ${steps} --engines ${engine}):\n`
          + `${result.problems.join("\n")}\n${result.log.join("\n")}`);
        assert.ok(result.counts.writes > 0, `seed ${seed} wrote nothing: ${JSON.stringify(result.counts)}`);
        // The run's log too: a coverage miss (the device armed to die
        // mid-range never did) can only be read there.
        assert.ok(result.counts["first syncs interrupted mid-range"] >= 1, `seed ${seed}: no first sync was interrupted mid-range: ${JSON.stringify(result.counts)}\n`
          + result.log.join("\n"));
      });
    }
  }
});

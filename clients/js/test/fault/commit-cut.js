// Both sync engines through a write whose COMMIT the network cut
// (NetworkFaultTests, docs/RELIABILITY.md "Network faults"): a CanopyJS
// device and a CanopyKit device of the fault run (device.js,
// canopykit-fault-device), each keeping the zone "slow" of one user, driven
// by the Swift test over JSON lines on stdin and stdout while it cuts and
// heals the gateway's link to the primary:
//
//   → {"type": "edit", "engine": "js" | "swift", "recordName": …, "value": n}
//   ← {"type": "queued", "engine": …}          the edit is stored and waiting
//   → {"type": "settle", "engine": …}
//   ← {"type": "settled", "engine": …, "pending": n, "hasPending": b, "records": {…}}
//   → {"type": "stop"}
//
// argv[2]: {"baseURL", "token", "directory", "binary"} (binary: the canopy
// executable; canopykit-fault-device is built beside it).

import {createInterface} from "node:readline";
import {dirname, join} from "node:path";
import {Device} from "./run.js";

const options = JSON.parse(process.argv[2]);
const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const world = {baseURL: options.baseURL, directory: options.directory, token: async () => options.token};
const user = {name: "alice", token: options.token};
const swiftDevice = join(dirname(options.binary), "canopykit-fault-device");

const devices = {};
for (const engine of ["js", "swift"]) {
  const device = new Device(world, {name: engine, user, scope: "PRIVATE", zone: {zoneName: "slow"},
    log: (text) => say({type: "log", text}), engine, swiftDevice});
  await device.start();
  devices[engine] = device;
}
say({type: "ready"});

for await (const line of createInterface({input: process.stdin})) {
  const message = JSON.parse(line);
  const device = devices[message.engine];
  try {
    switch (message.type) {
    case "edit":
      await device.ask({type: "edit", recordName: message.recordName, value: message.value});
      say({type: "queued", engine: message.engine});
      break;
    case "settle": {
      const answer = await device.ask({type: "settle"});
      say({...answer, type: "settled", engine: message.engine, failures: device.failures, errors: device.errors.slice(-5)});
      break;
    }
    case "stop":
      for (const each of Object.values(devices)) await each.stop();
      say({type: "stopped"});
      process.exit(0);
    }
  } catch (error) {
    say({type: "error", engine: message.engine, message: String(error?.message ?? error)});
  }
}

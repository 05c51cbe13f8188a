// Issue 40's sync benchmark: one Node process syncs a whole zone from the
// release gateway, either through CanopyJS's SyncEngine (records decoded
// into CanopyRecords and handed to a delegate that counts them, as an app
// would hand them to IndexedDB) or raw (zoneChanges pages over fetch,
// JSON.parse only: the same stack without the client). Prints one JSON line:
// {mode, records, seconds, rate, peakRSSMB, peakHeapMB, baseRSSMB}.
//   node js_sync.mjs BASE_URL TOKEN ZONE engine|raw
import {Container, SyncEngine, ZoneID} from "../../clients/js/index.js";

const [baseURL, token, zoneName, mode] = process.argv.slice(2);
let peakRSS = 0, peakHeap = 0;
const sample = () => {
  const usage = process.memoryUsage();
  peakRSS = Math.max(peakRSS, usage.rss);
  peakHeap = Math.max(peakHeap, usage.heapUsed);
};
global.gc?.();
const baseRSS = process.memoryUsage().rss;
let records = 0;
const started = performance.now();
if (mode === "engine") {
  const container = new Container({baseURL, token});
  const zone = new ZoneID(zoneName);
  const engine = new SyncEngine({
    database: container.privateDatabase,
    delegate: {
      recordToSave: () => null,
      handleEvent(event) {
        if (event.type === "fetchedRecordZoneChanges" && event.zoneID.zoneName === zoneName) {
          records += event.changed.length;
          sample();
        }
      },
    },
  });
  // The zone's feed alone, as after a database feed naming it.
  await engine.exclusive(() => engine.fetchZone(zone));
} else {
  let since = null;
  for (;;) {
    const response = await fetch(`${baseURL}/graphql`, {method: "POST", headers: {"Content-Type": "application/json", Authorization: `Bearer ${token}`},
      body: JSON.stringify({query: "query($z: ZoneID!, $s: String) { zoneChanges(scope: PRIVATE, zone: $z, since: $s, limit: 400) { changed { recordName recordType zone { zoneName ownerName } fields parent recordChangeTag created { timestamp userRecordName } modified { timestamp userRecordName } share { url } } deleted { recordName recordType } token moreComing } }",
        variables: {z: {zoneName}, s: since}})});
    const page = JSON.parse(await response.text()).data.zoneChanges;
    records += page.changed.length;
    sample();
    since = page.token;
    if (!page.moreComing) break;
  }
}
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({mode, records, seconds, rate: records / seconds, peakRSSMB: peakRSS / 2 ** 20, peakHeapMB: peakHeap / 2 ** 20, baseRSSMB: baseRSS / 2 ** 20}));

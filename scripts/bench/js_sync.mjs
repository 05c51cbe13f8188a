// Issue 40's sync benchmark, with issue 51's ranges: one Node process syncs
// a whole zone from the release gateway, either through CanopyJS's
// SyncEngine (records decoded into CanopyRecords and handed to a delegate
// that counts them, as an app would hand them to IndexedDB) or raw
// (zoneChanges pages over fetch, JSON.parse only: the same stack without the
// client). engine: a first sync in RANGES ranges (default 8); engine-chain:
// one chain of pages; raw: one chain; raw-ranges: zoneRanges, then RANGES
// chains at once (the engine's ceiling). Prints one JSON line:
// {mode, records, seconds, rate, peakRSSMB, peakHeapMB, baseRSSMB}.
//   node js_sync.mjs BASE_URL TOKEN ZONE engine|engine-chain|raw|raw-ranges [RANGES]
import {Container, SyncEngine, ZoneID} from "../../clients/js/index.js";

const [baseURL, token, zoneName, mode, rangesArgument = "8"] = process.argv.slice(2);
const ranges = Number(rangesArgument);
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
const post = async (query, variables) => {
  const response = await fetch(`${baseURL}/graphql`, {method: "POST", headers: {"Content-Type": "application/json", Authorization: `Bearer ${token}`},
    body: JSON.stringify({query, variables})});
  return JSON.parse(await response.text()).data;
};
const pageQuery = "query($z: ZoneID!, $s: String) { zoneChanges(scope: PRIVATE, zone: $z, since: $s, limit: 400) { changed { recordName recordType zone { zoneName ownerName } fields parent recordChangeTag created { timestamp userRecordName } modified { timestamp userRecordName } share { url } } deleted { recordName recordType } token moreComing } }";
/** One chain of raw pages from `since` to the end. */
const chain = async (since) => {
  for (;;) {
    const page = (await post(pageQuery, {z: {zoneName}, s: since})).zoneChanges;
    records += page.changed.length;
    sample();
    since = page.token;
    if (!page.moreComing) return since;
  }
};
if (mode === "engine" || mode === "engine-chain") {
  const container = new Container({baseURL, token});
  const zone = new ZoneID(zoneName);
  const engine = new SyncEngine({
    database: container.privateDatabase,
    firstSyncRanges: mode === "engine" ? ranges : 1,
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
} else if (mode === "raw-ranges") {
  const cut = (await post("query($z: ZoneID!, $n: Int) { zoneRanges(scope: PRIVATE, zone: $z, count: $n) { position ranges } }", {z: {zoneName}, n: ranges})).zoneRanges;
  await Promise.all(cut.ranges.map((range) => chain(range)));
  await chain(cut.position);   // the tail: nothing, with no writer
} else {
  await chain(null);
}
const seconds = (performance.now() - started) / 1000;
console.log(JSON.stringify({mode, records, seconds, rate: records / seconds, peakRSSMB: peakRSS / 2 ** 20, peakHeapMB: peakHeap / 2 ** 20, baseRSSMB: baseRSS / 2 ** 20}));

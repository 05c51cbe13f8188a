// CanopyJS: Canopy's JavaScript client for browsers and Node 20+, shaped
// like CloudKit JS and CanopyKit. Plain ES modules, no build step, no
// dependency; types in the .d.ts files beside them.

export {Auth} from "./auth.js";
export {Container, subscribeToWebPush} from "./container.js";
export {Database, maximumBatchSize} from "./database.js";
export {CanopyError, ErrorCode} from "./errors.js";
export {CanopyRecord, ZoneID, isRecordType} from "./records.js";
export {IndexedDBStorage, MemoryStorage} from "./storage.js";
export {SyncEngine} from "./sync-engine.js";
export {SyncedDatabase} from "./synced-database.js";
export {Asset, Double, Location, Reference, parseJSON, stringifyJSON} from "./values.js";

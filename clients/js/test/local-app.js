// The app the sync engine tests drive: a local copy of records keyed as
// the engine names zones, the engine's stored state, and a delegate that
// merges conflicts by putting the local edits on top of the server's record.

import {CanopyRecord, ErrorCode, SyncEngine} from "../index.js";

/**
 * A tiny app: its local copy of records (by zone key, then name), its
 * stored engine state, and a delegate that merges conflicts by taking the
 * server's record and putting the local fields on top.
 */
export class LocalApp {
  constructor(database, {state = null, automaticallySync = false, maximumRetries, pageSize, firstSyncRanges} = {}) {
    this.records = new Map();
    this.changedKeys = new Map();   // recordName → the keys edited locally and not yet sent
    this.conflicts = [];
    this.events = [];
    this.fetchedRecords = 0;
    this.savedState = state;
    const options = Object.fromEntries(Object.entries({maximumRetries, pageSize, firstSyncRanges}).filter(([, value]) => value !== undefined));
    this.engine = new SyncEngine({database, state, automaticallySync, delegate: this, ...options});
  }

  zone(zoneID) {
    const key = this.engine.canonicalZoneID(zoneID).key;
    if (!this.records.has(key)) this.records.set(key, new Map());
    return this.records.get(key);
  }

  /** Edits a record locally and queues it. */
  edit(zoneID, recordName, recordType, fields) {
    const existing = this.zone(zoneID).get(recordName);
    const record = existing ? new CanopyRecord({...existing, fields: {...existing.fields, ...fields}}) : new CanopyRecord({recordName, recordType, fields});
    this.zone(zoneID).set(recordName, record);
    this.changedKeys.set(recordName, new Set([...(this.changedKeys.get(recordName) ?? []), ...Object.keys(fields)]));
    this.engine.addPendingRecordChanges([{kind: "save", zoneID, recordName}]);
  }

  recordToSave(zoneID, recordName) {
    return this.zone(zoneID).get(recordName) ?? null;
  }

  async handleEvent(event) {
    this.events.push(event.type);
    switch (event.type) {
    case "stateUpdate": this.savedState = JSON.parse(JSON.stringify(event.state)); break;
    case "fetchedRecordZoneChanges":
      for (const record of event.changed) this.take(event.zoneID, record, event.pending);
      for (const tombstone of event.deleted) if (event.pending[tombstone.recordName] !== "save") this.zone(event.zoneID).delete(tombstone.recordName);
      this.fetchedRecords += event.changed.length;
      break;
    case "fetchedDatabaseChanges":
      for (const zone of event.deletedZones) this.records.delete(this.engine.canonicalZoneID(zone).key);
      break;
    case "changeTokenExpired": {
      // Fetched again from nothing; what waits to be sent is kept.
      const waiting = new Set(this.engine.pendingRecordChanges.map((change) => `${change.zoneID.key}/${change.recordName}`));
      for (const [key, zone] of this.records) {
        if (event.zoneID && key !== this.engine.canonicalZoneID(event.zoneID).key) continue;
        for (const name of [...zone.keys()]) if (!waiting.has(`${key}/${name}`)) zone.delete(name);
      }
      break;
    }
    case "sentRecordZoneChanges":
      for (const record of event.savedRecords) {
        this.take(event.zoneID, record, event.pending);
        if (!event.pending[record.recordName]) this.changedKeys.delete(record.recordName);
      }
      for (const failure of event.failedRecordSaves) {
        if (failure.error.code !== ErrorCode.SERVER_RECORD_CHANGED) throw failure.error;
        this.conflicts.push(failure.recordName);
        const mine = this.zone(event.zoneID).get(failure.recordName);
        const server = failure.error.serverRecord;
        const edited = Object.fromEntries([...this.changedKeys.get(failure.recordName) ?? []].map((key) => [key, mine.fields[key]]));
        this.zone(event.zoneID).set(failure.recordName, new CanopyRecord({...server, fields: {...server.fields, ...edited}}));
        this.engine.addPendingRecordChanges([{kind: "save", zoneID: event.zoneID, recordName: failure.recordName}]);
      }
      break;
    }
  }

  /**
   * A record from the server into the local copy: as it is, unless an
   * edit of it still waits (pending), which then stays on top of it.
   */
  take(zoneID, record, pending) {
    if (pending[record.recordName] === "delete") return;
    if (pending[record.recordName] === "save") {
      const mine = this.zone(zoneID).get(record.recordName);
      const edited = Object.fromEntries([...this.changedKeys.get(record.recordName) ?? []].map((key) => [key, mine?.fields[key]]));
      record = new CanopyRecord({...record, fields: {...record.fields, ...edited}});
    }
    this.zone(zoneID).set(record.recordName, record);
  }

  fields(zoneID) {
    return Object.fromEntries([...this.zone(zoneID).entries()].map(([name, record]) => [name, record.fields]).sort(([a], [b]) => a < b ? -1 : 1));
  }
}


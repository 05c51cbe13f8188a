// The app's own copy of one database: lists are zones, items are records
// of type Item. Edits are applied here at once and queued in a SyncEngine,
// which sends them when it can and fetches what others change, live. The
// copy, the fields edited here and not yet saved, and the engine's state
// are kept in localStorage as JSON, so nothing is lost offline or on reload.

export class ListStore {
  /**
   * canopy: the CanopyJS module; database: container.privateDatabase or
   * container.sharedDatabase; key: where to keep it in localStorage.
   * onChange() is called after every change (a serverReachabilityChanged
   * event too); onError(error) on a failure.
   */
  constructor(canopy, database, key, {onChange, onError}) {
    this.canopy = canopy;
    this.database = database;
    this.key = key;
    this.onChange = onChange;
    this.onError = onError;
    const saved = JSON.parse(localStorage.getItem(key) ?? "{}");
    /** zone key (the engine's: SyncEngine.canonicalZoneID) → {zoneID, shareURL, items: Map(recordName → CanopyRecord)} */
    this.lists = new Map();
    /** "zone key record name" → the fields changed here that the server does not have yet */
    this.edits = new Map(Object.entries(saved.edits ?? {}));
    // Automatic: it listens for changes, sends ~100 ms after an edit, and
    // sends at once what was still queued when the page was last closed.
    // (Its first event comes after this constructor has returned.)
    this.engine = new canopy.SyncEngine({database, state: saved.state ?? null, delegate: this, automaticallySync: true});
    for (const list of saved.lists ?? []) {
      const items = list.items.map((json) => canopy.CanopyRecord.fromJSON(json));
      this.addList(canopy.ZoneID.from(list.zoneID), list.shareURL, items);
    }
  }

  /** A list, keyed as the engine names its zone: one key however a zone is written. */
  addList(zone, shareURL = null, items = []) {
    const zoneID = this.engine.canonicalZoneID(zone);
    const list = this.lists.get(zoneID.key) ?? {zoneID, shareURL, items: new Map()};
    if (shareURL) list.shareURL = shareURL;
    for (const item of items) list.items.set(item.recordName, item);
    this.lists.set(zoneID.key, list);
    return list;
  }

  /** How many changes wait to be sent. */
  get pending() { return this.engine.pendingRecordChanges.length; }

  /**
   * Whether the server answers (the engine's serverReachable): false while
   * it cannot be reached, when what waits is sent by itself once it can;
   * null before the first request.
   */
  get reachable() { return this.engine.serverReachable; }

  // MARK: Edits, applied here at once and queued

  /** Creates an item or changes some of its fields. */
  edit(zone, recordName, fields) {
    const list = this.addList(zone);
    const zoneID = list.zoneID;
    const existing = list.items.get(recordName);
    const {CanopyRecord} = this.canopy;
    list.items.set(recordName, existing
      ? new CanopyRecord({...existing, fields: {...existing.fields, ...fields}})
      : new CanopyRecord({recordName, recordType: "Item", fields, zoneID}));
    const key = `${zoneID.key} ${recordName}`;
    this.edits.set(key, {...this.edits.get(key), ...fields});
    this.engine.addPendingRecordChanges([{kind: "save", zoneID, recordName}]);
    this.changed();
  }

  remove(zone, recordName) {
    const zoneID = this.engine.canonicalZoneID(zone);
    this.lists.get(zoneID.key)?.items.delete(recordName);
    this.edits.delete(`${zoneID.key} ${recordName}`);
    this.engine.addPendingRecordChanges([{kind: "delete", zoneID, recordName}]);
    this.changed();
  }

  /** Sends what waits and fetches what changed (back online, or told by a push). */
  sync() {
    return this.engine.sendChanges().then(() => this.engine.fetchChanges()).catch((error) => this.onError(error));
  }

  // MARK: The engine's delegate

  recordToSave(zoneID, recordName) {
    return this.lists.get(zoneID.key)?.items.get(recordName) ?? null;
  }

  async handleEvent(event) {
    switch (event.type) {
    case "fetchedDatabaseChanges":
      for (const zone of event.changedZones) this.addList(zone, zone.share?.url);
      for (const zone of event.deletedZones) this.lists.delete(this.engine.canonicalZoneID(zone).key);
      break;
    case "fetchedRecordZoneChanges": {
      const list = this.addList(event.zoneID);
      for (const record of event.changed) {
        if (record.recordType !== "Item" || this.pendingKind(event.zoneID, record.recordName) === "delete") continue;
        list.items.set(record.recordName, this.withEdits(event.zoneID, record));
      }
      for (const {recordName} of event.deleted) list.items.delete(recordName);
      break;
    }
    case "sentRecordZoneChanges": {
      const list = this.addList(event.zoneID);
      for (const record of event.savedRecords) {
        const kind = this.pendingKind(event.zoneID, record.recordName);
        if (!kind) this.edits.delete(`${event.zoneID.key} ${record.recordName}`);   // the server has every local change
        if (kind !== "delete") list.items.set(record.recordName, this.withEdits(event.zoneID, record));
      }
      for (const {recordName, error} of event.failedRecordSaves) {
        if (error.code === this.canopy.ErrorCode.SERVER_RECORD_CHANGED && error.serverRecord) {
          // Someone saved it first: take theirs, put our changed fields on top, send again (last writer wins, field by field).
          list.items.set(recordName, this.withEdits(event.zoneID, error.serverRecord));
          this.engine.addPendingRecordChanges([{kind: "save", zoneID: event.zoneID, recordName}]);
        } else {
          this.edits.delete(`${event.zoneID.key} ${recordName}`);
          this.onError(error);
          this.refetch(event.zoneID, recordName);
        }
      }
      for (const {error} of event.failedRecordDeletes) this.onError(error);
      break;
    }
    case "changeTokenExpired":
      // Everything will be fetched again; keep only what has unsent edits.
      for (const list of this.lists.values()) {
        if (event.zoneID && list.zoneID.key !== event.zoneID.key) continue;
        for (const name of list.items.keys()) if (!this.edits.has(`${list.zoneID.key} ${name}`)) list.items.delete(name);
      }
      break;
    case "error":
      this.onError(event.error);
      return;
    }
    this.changed();
  }

  // MARK: Helpers

  /** The server's record with the fields edited here and not yet saved on top. */
  withEdits(zoneID, record) {
    const edits = this.edits.get(`${zoneID.key} ${record.recordName}`);
    return edits ? new this.canopy.CanopyRecord({...record, fields: {...record.fields, ...edits}}) : record;
  }

  pendingKind(zoneID, recordName) {
    return this.engine.pendingRecordChanges.find((change) => change.zoneID.key === zoneID.key && change.recordName === recordName)?.kind;
  }

  /** After a refused save, shows the server's version again (or nothing, if it has none). */
  async refetch(zoneID, recordName) {
    const [result] = await this.database.lookup(zoneID, [recordName]).catch(() => [{}]);
    const items = this.lists.get(zoneID.key)?.items;
    if (result.record) items?.set(recordName, result.record);
    else if (result.error) items?.delete(recordName);
    this.changed();
  }

  changed() {
    localStorage.setItem(this.key, JSON.stringify({
      state: this.engine.state,
      lists: [...this.lists.values()].map(({zoneID, shareURL, items}) => ({zoneID, shareURL, items: [...items.values()]})),
      edits: Object.fromEntries(this.edits),
    }));
    this.onChange();
  }
}

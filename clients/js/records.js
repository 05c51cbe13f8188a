// Records and zone IDs as the client hands them to an app, and the GraphQL
// selections that read them.

import {decodeFields, encodeFields, storableFields} from "./values.js";

/**
 * A zone's identity (`CKRecordZone.ID`): its name and, in the shared
 * database, its owner's userRecordName (null: the caller's own).
 */
export class ZoneID {
  constructor(zoneName, ownerName = null) {
    if (typeof zoneName !== "string" || zoneName === "") throw new TypeError("a ZoneID needs a zoneName");
    this.zoneName = zoneName;
    this.ownerName = ownerName ?? null;
  }

  /** The public database's one zone, and each user's default zone. */
  static get default() { return new ZoneID("_defaultZone"); }

  /** A ZoneID from a string ("name"), an object ({zoneName, ownerName}) or a ZoneID. */
  static from(value) {
    if (value instanceof ZoneID) return value;
    if (typeof value === "string") return new ZoneID(value);
    if (value && typeof value === "object") return new ZoneID(value.zoneName, value.ownerName);
    throw new TypeError("a zone is a zone name or {zoneName, ownerName}");
  }

  /** "owner/name" or "name": a key for maps and serialized state. */
  get key() { return this.ownerName ? `${this.ownerName}/${this.zoneName}` : this.zoneName; }

  toJSON() { return this.ownerName ? {zoneName: this.zoneName, ownerName: this.ownerName} : {zoneName: this.zoneName}; }
}

/**
 * A record (`CKRecord`): its name, type and fields as JavaScript values
 * (values.js), the change tag the server gave it (sent back on save so a
 * concurrent change is a conflict rather than lost), its parent, and who
 * made and last changed it when.
 */
export class CanopyRecord {
  constructor({recordName, recordType, fields = {}, recordChangeTag = null, parent = null, zoneID = null,
    created = null, modified = null, share = null} = {}) {
    if (typeof recordName !== "string" || recordName === "") throw new TypeError("a record needs a recordName");
    if (typeof recordType !== "string" || recordType === "") throw new TypeError(`record ${recordName} needs a recordType`);
    this.recordName = recordName;
    this.recordType = recordType;
    this.fields = fields;
    this.recordChangeTag = recordChangeTag;
    this.parent = parent;
    this.zoneID = zoneID ? ZoneID.from(zoneID) : null;
    this.created = created;
    this.modified = modified;
    this.share = share;
  }

  /** The record as the server sent it (a `Record` selected with recordSelection). */
  static fromServer(json) {
    return new CanopyRecord({
      recordName: json.recordName,
      recordType: json.recordType,
      fields: decodeFields(json.fields),
      recordChangeTag: json.recordChangeTag ?? null,
      parent: json.parent ?? null,
      zoneID: json.zone ? new ZoneID(json.zone.zoneName, json.zone.ownerName) : null,
      created: json.created ? stamp(json.created) : null,
      modified: json.modified ? stamp(json.modified) : null,
      share: json.share ?? null,
    });
  }

  /** A plain object that JSON.stringify can hold and `CanopyRecord.fromJSON` reads back (for a local copy). */
  toJSON() {
    return {
      recordName: this.recordName, recordType: this.recordType, fields: storableFields(this.fields), share: this.share,
      recordChangeTag: this.recordChangeTag, parent: this.parent, zoneID: this.zoneID,
      created: this.created && {date: this.created.date.getTime(), userRecordName: this.created.userRecordName},
      modified: this.modified && {date: this.modified.date.getTime(), userRecordName: this.modified.userRecordName},
    };
  }

  static fromJSON(json) {
    return new CanopyRecord({
      ...json,
      fields: decodeFields(json.fields),
      created: json.created && {date: new Date(json.created.date), userRecordName: json.created.userRecordName},
      modified: json.modified && {date: new Date(json.modified.date), userRecordName: json.modified.userRecordName},
    });
  }
}

function stamp(json) {
  return {date: new Date(json.timestamp), userRecordName: json.userRecordName};
}

/** The RecordInput of a save: a CanopyRecord or a plain {recordName, recordType, fields, ...}. */
export function recordInput(record) {
  if (!record || typeof record !== "object") throw new TypeError("a save is a record: {recordName, recordType, fields}");
  if (typeof record.recordName !== "string" || record.recordName === "") throw new TypeError("a saved record needs a recordName");
  if (typeof record.recordType !== "string" || record.recordType === "") throw new TypeError(`record ${record.recordName} needs a recordType`);
  const input = {recordName: record.recordName, recordType: record.recordType, fields: encodeFields(record.fields)};
  if (record.recordChangeTag) input.recordChangeTag = record.recordChangeTag;
  if (record.parent) input.parent = typeof record.parent === "string" ? record.parent : record.parent.recordName;
  if (record.savePolicy) input.savePolicy = record.savePolicy;
  return input;
}

/**
 * Whether `record` is of type `recordType`; in TypeScript it narrows the
 * record to the fields a schema declares for that type (records.d.ts).
 */
export function isRecordType(record, recordType) {
  return record?.recordType === recordType;
}

/** The selection of a Record; `fields(keys: $desiredKeys)` when the operation declares it. */
export function recordSelection(withKeys = false) {
  return `recordName recordType zone { zoneName ownerName } fields${withKeys ? "(keys: $desiredKeys)" : ""} parent recordChangeTag created { timestamp userRecordName } modified { timestamp userRecordName } share { url }`;
}

/** The selection of a per-record error, with the server's record on a conflict. */
export const recordErrorSelection = `recordName code message serverRecord { ${recordSelection()} }`;

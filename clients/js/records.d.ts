// Types of records.js: records and zone IDs as the client hands them to an
// app, and the GraphQL selections that read them.

import type {EncodedValue, Fields, FieldsInput} from "./values.js";

/** A zone as the methods accept it: a ZoneID, a zone name, or {zoneName, ownerName}. */
export type ZoneLike = ZoneID | string | {zoneName: string; ownerName?: string | null};

/**
 * A zone's identity (`CKRecordZone.ID`): its name and, in the shared
 * database, its owner's userRecordName (null: the caller's own).
 */
export declare class ZoneID {
  /** Throws TypeError for an empty zoneName. */
  constructor(zoneName: string, ownerName?: string | null);
  zoneName: string;
  ownerName: string | null;
  /** The public database's one zone, and each user's default zone (a new ZoneID each time). */
  static get default(): ZoneID;
  /** A ZoneID from a string ("name"), an object ({zoneName, ownerName}) or a ZoneID. */
  static from(value: ZoneLike): ZoneID;
  /** "owner/name" or "name": a key for maps and serialized state. */
  get key(): string;
  /** The API's ZoneID input; ownerName only when set. */
  toJSON(): {zoneName: string; ownerName?: string};
}

/** Who made or last changed a record, and when. */
export interface Stamp {
  date: Date;
  userRecordName: string;
}

/** A share as a record or zone points at it: its URL. */
export interface ShareLink {
  url: string;
}

/** How a save treats the server's version (the server's SavePolicy). */
export type SavePolicy =
  | "IF_SERVER_RECORD_UNCHANGED"
  | "CHANGED_KEYS"
  | "ALL_KEYS"
  | "IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS";

/** What a CanopyRecord is made from; recordName and recordType are required (TypeError otherwise). */
export interface CanopyRecordOptions<F = Fields> {
  recordName: string;
  recordType: string;
  fields?: F;
  recordChangeTag?: string | null;
  /** The parent's recordName, same zone. */
  parent?: string | null;
  zoneID?: ZoneLike | null;
  created?: Stamp | null;
  modified?: Stamp | null;
  share?: ShareLink | null;
}

/** A stamp in a record's JSON: the date in ms since the epoch. */
export interface StampJSON {
  date: number;
  userRecordName: string;
}

/** A record as `CanopyRecord.toJSON` writes it and `CanopyRecord.fromJSON` reads it. */
export interface CanopyRecordJSON {
  recordName: string;
  recordType: string;
  /** Encoded values: BigInt and Double need stringifyJSON to be written exactly. */
  fields: {[name: string]: EncodedValue};
  recordChangeTag: string | null;
  parent: string | null;
  zoneID: ZoneLike | null;
  created: StampJSON | null;
  modified: StampJSON | null;
}

/**
 * A record (`CKRecord`): its name, type and fields as JavaScript values
 * (values.js), the change tag the server gave it (sent back on save so a
 * concurrent change is a conflict rather than lost), its parent, and who
 * made and last changed it when.
 */
export declare class CanopyRecord<F = Fields> {
  constructor(options: CanopyRecordOptions<F>);
  recordName: string;
  recordType: string;
  /** The fields by name; typed from the schema for a declared type (RecordTypes, isRecordType). */
  fields: F;
  /** The server's version tag; null for a record never saved. */
  recordChangeTag: string | null;
  /** The parent's recordName, same zone. */
  parent: string | null;
  zoneID: ZoneID | null;
  created: Stamp | null;
  modified: Stamp | null;
  /** Set on a share's root record. */
  share: ShareLink | null;
  /** The record as the server sent it (a `Record` selected with recordSelection). */
  static fromServer(json: any): CanopyRecord;
  /** A plain object that JSON can hold and `CanopyRecord.fromJSON` reads back (without `share`). */
  toJSON(): CanopyRecordJSON;
  /** A record from what `toJSON` wrote. */
  static fromJSON(json: CanopyRecordJSON): CanopyRecord;
}

/**
 * The record types an app declares, by name, with their fields: empty
 * here. `canopy schema typescript` writes a file that adds each record
 * type of a schema to it (declaration merging), after which a query of a
 * declared type answers typed records and `isRecordType` narrows any
 * record to one (docs/TYPESCRIPT.md).
 */
export interface RecordTypes {}

/** A record of the declared type `T`: its recordType that name, its fields as the schema declares them. */
export type TypedRecord<T extends keyof RecordTypes & string> = CanopyRecord<RecordTypes[T]> & {recordType: T};

/** A record of type `T`: typed when `T` is declared in RecordTypes, a plain CanopyRecord otherwise. */
export type RecordOf<T extends string> = T extends keyof RecordTypes ? TypedRecord<T> : CanopyRecord;

/**
 * Whether `record` is of the declared type `recordType`; in TypeScript it
 * narrows the record, so that its fields have the schema's types. A check
 * of the name only: the server keeps fields to their declared types.
 */
export declare function isRecordType<T extends keyof RecordTypes & string>(record: CanopyRecord<unknown>, recordType: T): record is TypedRecord<T>;

/**
 * What a save accepts: a CanopyRecord or a plain object. `parent` is a
 * recordName or anything with one (a Reference); `savePolicy` overrides the
 * batch's for this record.
 */
export interface SavableRecord {
  recordName: string;
  recordType: string;
  fields?: FieldsInput | null;
  recordChangeTag?: string | null;
  parent?: string | {recordName: string} | null;
  savePolicy?: SavePolicy;
}

/**
 * A declared type's fields as a save takes them: each the type it is read
 * as (docs/TYPESCRIPT.md), null to remove it, absent to leave it as it is.
 */
export type FieldsInputOf<F> = {[K in keyof F]?: F[K] | null};

/** A save of the declared type `T`: a SavableRecord whose fields are the schema's, so a misspelt or mistyped field does not compile. */
export interface TypedSavableRecord<T extends keyof RecordTypes & string> {
  recordName: string;
  recordType: T;
  fields?: FieldsInputOf<RecordTypes[T]> | null;
  recordChangeTag?: string | null;
  parent?: string | {recordName: string} | null;
  savePolicy?: SavePolicy;
}

/**
 * What a save of `recordType` T takes: a TypedSavableRecord when T is
 * declared in RecordTypes, a SavableRecord otherwise (an undeclared type,
 * or a recordType only known as a string). Save methods take
 * `{recordType: T} & SavableRecordOf<T>`, so T is read from the record.
 */
export type SavableRecordOf<T extends string> =
  T extends keyof RecordTypes ? TypedSavableRecord<T> : SavableRecord & {recordType: T};

/** The API's RecordInput (what recordInput answers). */
export interface RecordInputJSON {
  recordName: string;
  recordType: string;
  fields: {[name: string]: EncodedValue};
  recordChangeTag?: string;
  parent?: string;
  savePolicy?: SavePolicy;
}

/** The RecordInput of a save: a CanopyRecord or a plain {recordName, recordType, fields, ...}; TypeError when malformed. */
export declare function recordInput(record: SavableRecord): RecordInputJSON;

/** The GraphQL selection of a Record; `fields(keys: $desiredKeys)` when the operation declares it. */
export declare function recordSelection(withKeys?: boolean): string;

/** The GraphQL selection of a per-record error, with the server's record on a conflict. */
export declare const recordErrorSelection: string;

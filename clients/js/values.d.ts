// Types of values.js: field values (docs/API.md §4, §11) as JavaScript values,
// and JSON that keeps INT64 exact.

/** What deleting a reference's target does to the record that refers to it. */
export type ReferenceAction = "NONE" | "DELETE_SELF";

/** A field pointing at another record of the same zone (`CKRecord.Reference`). */
export declare class Reference {
  /** action: "NONE" (default) or "DELETE_SELF" (deleted with its target). */
  constructor(recordName: string, action?: ReferenceAction);
  recordName: string;
  action: ReferenceAction;
}

/**
 * The optional parts of a Location, as CloudKit's Location Dictionary has
 * them; each left out when not known.
 */
export interface LocationOptions {
  /** Radius of uncertainty of latitude and longitude, in metres. */
  horizontalAccuracy?: number;
  /** Uncertainty of altitude, in metres. */
  verticalAccuracy?: number;
  /** Metres above sea level. */
  altitude?: number;
  /** Metres per second. */
  speed?: number;
  /** Direction of travel in degrees from true north. */
  course?: number;
  /** When the location was determined (milliseconds since the epoch on the wire). */
  timestamp?: Date;
}

/**
 * A latitude and longitude in degrees, and optionally the rest of a
 * `CLLocation` (CloudKit's Location Dictionary). An option is a property
 * of the object only when given; only those given are sent.
 */
export declare class Location {
  constructor(latitude: number, longitude: number, options?: LocationOptions);
  latitude: number;
  longitude: number;
  horizontalAccuracy?: number;
  verticalAccuracy?: number;
  altitude?: number;
  speed?: number;
  course?: number;
  timestamp?: Date;
}

/** What an Asset is made from: the server's answer, or an upload's. */
export interface AssetOptions {
  uploadToken?: string;
  size?: number;
  contentType?: string;
  sha256?: string;
  downloadURL?: string;
}

/**
 * A file attached to a record (`CKAsset`). Read from the server it has
 * `size`, `contentType`, `sha256` and a signed `downloadURL` (valid about an
 * hour; fetch it without a token); made by `container.uploadAsset` it has
 * the `uploadToken` a save attaches.
 */
export declare class Asset {
  constructor(options?: AssetOptions);
  /** Set on an upload's asset: what a save sends to attach the bytes. */
  uploadToken: string | undefined;
  size: number | undefined;
  contentType: string | undefined;
  sha256: string | undefined;
  /** Set on an asset read from the server: a signed URL, valid about an hour. */
  downloadURL: string | undefined;
}

/** A number sent as DOUBLE even when whole (a whole JS number is sent as INT64). */
export declare class Double {
  /** value: converted with Number(). */
  constructor(value: number | bigint | string);
  value: number;
  valueOf(): number;
}

/**
 * A field's value as the client reads and writes it: STRING as string,
 * INT64 as number (bigint beyond 2^53), DOUBLE as number (or Double, to
 * send a whole number as DOUBLE), TIMESTAMP as Date, BYTES as Uint8Array,
 * and lists as arrays. Values read are never Double.
 */
export type FieldValue =
  | string
  | number
  | bigint
  | boolean
  | Date
  | Reference
  | Location
  | Uint8Array
  | Asset
  | Double
  | FieldValue[]
  | null;

/** A record's fields by name, as read from the server. */
export interface Fields {
  [name: string]: FieldValue;
}

/** A value as the API writes it in JSON (what encodeValue answers and decodeValue reads). */
export type EncodedValue =
  | string
  | number
  | bigint
  | boolean
  | Double
  | null
  | {type: "TIMESTAMP"; value: number}
  | {type: "REFERENCE"; recordName: string; action: ReferenceAction}
  | {type: "LOCATION"; latitude: number; longitude: number; horizontalAccuracy?: number; verticalAccuracy?: number;
     altitude?: number; speed?: number; course?: number; timestamp?: number}
  | {type: "BYTES"; base64: string}
  | {type: "ASSET"; uploadToken: string}
  | {type: "ASSET"; sha256: string; size?: number; contentType?: string; downloadURL?: string}
  | EncodedValue[];

/**
 * What a save accepts for a field: a FieldValue, an ArrayBuffer (sent as
 * BYTES), a value already in the API's form, or undefined (left out).
 */
export type FieldInput = FieldValue | ArrayBuffer | EncodedValue | undefined;

/** A record's fields as a save accepts them. */
export interface FieldsInput {
  [name: string]: FieldInput;
}

/** JSON.stringify that writes BigInt as a JSON integer and Double as a number with a fraction. */
export declare function stringifyJSON(value: unknown): string;

/** JSON.parse that reads integers beyond 2^53 as BigInt rather than rounding them. */
export declare function parseJSON(text: string): any;

/**
 * One value as the API writes it; throws TypeError naming `field` for
 * what has no API form (encodeFields uses it for a save).
 */
export declare function encodeValue(value: FieldInput, field?: string): EncodedValue;

/** One value as the API reads it, into JavaScript (a form it does not know comes back as it is). */
export declare function decodeValue(value: unknown): FieldValue;

/**
 * A query's `args`, encoded as field values are (a Date as a TIMESTAMP, a
 * BigInt exact); throws TypeError naming the argument for what has no API form.
 */
export declare function encodeArguments(args: {[name: string]: FieldInput} | FieldInput[] | null | undefined): unknown;

/** A record's fields, encoded for a save (undefined values left out). */
export declare function encodeFields(fields: FieldsInput | null | undefined): {[name: string]: EncodedValue};

/**
 * A record's fields as plain JSON for a local copy: BigInt and Double kept
 * as `{type: "INT64" | "DOUBLE", value}`, which decodeFields reads back.
 */
export declare function storableFields(fields: FieldsInput | null | undefined): {[name: string]: unknown};

/** A record's fields as the server sent them, decoded. */
export declare function decodeFields(fields: {[name: string]: unknown} | null | undefined): Fields;

// Field values (docs/API.md §4, §11) as JavaScript values, both ways: dates as
// Date, INT64 beyond 2^53 as BigInt, references, locations, bytes, assets
// and lists of these. And JSON that keeps such integers exact.

/** A field pointing at another record of the same zone (`CKRecord.Reference`). */
export class Reference {
  /** action: "NONE" or "DELETE_SELF" (deleted with its target). */
  constructor(recordName, action = "NONE") {
    this.recordName = recordName;
    this.action = action;
  }
}

/** The optional keys of a Location, in the order they are written. */
const locationKeys = ["horizontalAccuracy", "verticalAccuracy", "altitude", "speed", "course", "timestamp"];

/**
 * A latitude and longitude in degrees, and optionally the rest of a
 * `CLLocation` (CloudKit's Location Dictionary): `horizontalAccuracy` and
 * `verticalAccuracy` (metres), `altitude` (metres), `speed` (metres per
 * second), `course` (degrees) and `timestamp` (a Date; milliseconds on the
 * wire). An option is a property of the object only when given.
 */
export class Location {
  constructor(latitude, longitude, options = {}) {
    this.latitude = latitude;
    this.longitude = longitude;
    for (const key of locationKeys) {
      if (options?.[key] !== undefined && options[key] !== null) this[key] = options[key];
    }
  }
}

function encodeLocation(location, field) {
  const encoded = {type: "LOCATION", latitude: location.latitude, longitude: location.longitude};
  for (const key of locationKeys) {
    let item = location[key];
    if (item === undefined || item === null) continue;
    if (key === "timestamp") {
      if (!(item instanceof Date)) throw new TypeError(`field ${field}: a Location's timestamp is a Date`);
      item = item.getTime();
      if (Number.isNaN(item)) throw new TypeError(`field ${field}: a Location's timestamp is an invalid Date`);
    } else if (typeof item !== "number" || !Number.isFinite(item)) {
      throw new TypeError(`field ${field}: a Location's ${key} is a finite number`);
    }
    encoded[key] = item;
  }
  return encoded;
}

function decodeLocation(value) {
  const options = {};
  for (const key of locationKeys) {
    const item = value[key];
    if (item === undefined || item === null) continue;
    options[key] = key === "timestamp" ? new Date(Number(item)) : Number(item);
  }
  return new Location(value.latitude, value.longitude, options);
}

/**
 * A file attached to a record (`CKAsset`). Read from the server it has
 * `size`, `contentType`, `sha256` and a signed `downloadURL` (valid about an
 * hour; fetch it without a token); made by `container.uploadAsset` it has
 * the `uploadToken` a save attaches.
 */
export class Asset {
  constructor({uploadToken, size, contentType, sha256, downloadURL} = {}) {
    this.uploadToken = uploadToken;
    this.size = size;
    this.contentType = contentType;
    this.sha256 = sha256;
    this.downloadURL = downloadURL;
  }
}

/** A number sent as DOUBLE even when whole (a whole JS number is sent as INT64). */
export class Double {
  constructor(value) { this.value = Number(value); }
  valueOf() { return this.value; }
}

const bigIntMark = "\u0000canopy-int:";
const rawMark = "\u0000canopy-raw:";

/** JSON.stringify that writes BigInt as a JSON integer and Double as a number with a fraction. */
export function stringifyJSON(value) {
  let marked = false;
  const text = JSON.stringify(value, (key, item) => {
    if (typeof item === "bigint") { marked = true; return bigIntMark + item.toString(); }
    if (item instanceof Double) {
      if (!Number.isFinite(item.value)) throw new TypeError("a DOUBLE field must be a finite number");
      marked = true;
      const text = String(item.value);
      return rawMark + (/[.eE]/.test(text) ? text : `${text}.0`);
    }
    return item;
  });
  return marked ? text.replace(/"\\u0000canopy-(?:int|raw):([-+.0-9eE]+)"/g, "$1") : text;
}

/**
 * JSON.parse that reads integers beyond 2^53 as BigInt rather than
 * rounding them. Bodies without a run of 16 digits (nearly all) go
 * straight to JSON.parse.
 */
export function parseJSON(text) {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  let out = "", start = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;              // backslash: skip the escaped character
      else if (c === 34) inString = false;
      continue;
    }
    if (c === 34) { inString = true; continue; }
    if (c === 45 || (c >= 48 && c <= 57)) {
      let j = i + 1;
      while (j < text.length && /[-+.0-9eE]/.test(text[j])) j++;
      const number = text.slice(i, j);
      if (/^-?\d{16,}$/.test(number) && !Number.isSafeInteger(Number(number))) {
        out += text.slice(start, i) + `"${bigIntMark.replace("\u0000", "\\u0000")}${number}"`;
        start = j;
      }
      i = j - 1;
    }
  }
  if (start === 0) return JSON.parse(text);
  out += text.slice(start);
  return JSON.parse(out, (key, value) =>
    typeof value === "string" && value.startsWith(bigIntMark) ? BigInt(value.slice(bigIntMark.length)) : value);
}

function base64FromBytes(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function bytesFromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** One value as the API writes it; throws TypeError naming the field for what has no API form. */
export function encodeValue(value, field = "value") {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case "string": case "boolean": return value;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`field ${field}: ${value} is not a number the API can store`);
      // A whole number is sent as INT64; beyond 2^53 a JavaScript number is
      // already rounded, so sending it would store another integer.
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        throw new TypeError(`field ${field}: ${value} is a whole number beyond 2^53, which a JavaScript number cannot hold exactly: `
          + `pass a BigInt (${BigInt(value)}n, or BigInt("…") from its digits) for INT64, or new Double(${value}) for DOUBLE`);
      }
      return value;
    case "bigint":
      if (value > 9223372036854775807n || value < -9223372036854775808n) throw new TypeError(`field ${field}: ${value} does not fit in INT64`);
      return value;
  }
  if (value instanceof Double) return value;
  if (value instanceof Date) {
    const time = value.getTime();
    if (Number.isNaN(time)) throw new TypeError(`field ${field}: an invalid Date`);
    return {type: "TIMESTAMP", value: time};
  }
  if (value instanceof Reference) return {type: "REFERENCE", recordName: value.recordName, action: value.action ?? "NONE"};
  if (value instanceof Location) return encodeLocation(value, field);
  if (value instanceof Uint8Array) return {type: "BYTES", base64: base64FromBytes(value)};
  if (value instanceof ArrayBuffer) return {type: "BYTES", base64: base64FromBytes(new Uint8Array(value))};
  if (value instanceof Asset) {
    if (value.uploadToken) return {type: "ASSET", uploadToken: value.uploadToken};
    if (value.sha256) return {type: "ASSET", sha256: value.sha256, size: value.size, contentType: value.contentType};
    throw new TypeError(`field ${field}: an Asset needs an uploadToken (container.uploadAsset) or the sha256 it was read with`);
  }
  if (Array.isArray(value)) return value.map((item, index) => encodeValue(item, `${field}[${index}]`));
  if (typeof value === "object" && typeof value.type === "string") return value;   // already in the API's form
  throw new TypeError(`field ${field}: ${Object.prototype.toString.call(value)} has no API form (use a string, number, bigint, boolean, Date, Reference, Location, Uint8Array, Asset or an array)`);
}

/** One value as the API reads it, into JavaScript. */
export function decodeValue(value) {
  if (Array.isArray(value)) return value.map(decodeValue);
  if (value === null || typeof value !== "object") return value;
  switch (value.type) {
    case "TIMESTAMP": return new Date(Number(value.value));
    case "REFERENCE": return new Reference(value.recordName, value.action ?? "NONE");
    case "LOCATION": return decodeLocation(value);
    case "BYTES": return bytesFromBase64(value.base64);
    case "ASSET": return new Asset(value);
    // Only in JSON the client wrote itself (CanopyRecord.toJSON), never from the server:
    case "INT64": return BigInt(value.value);
    case "DOUBLE": return new Double(value.value);
    default: return value;
  }
}

/** A record's fields as plain JSON (BigInt and Double kept as typed objects) for storage. */
export function storableFields(fields) {
  const store = (value) => typeof value === "bigint" ? {type: "INT64", value: value.toString()}
    : value instanceof Double ? {type: "DOUBLE", value: value.value}
    : Array.isArray(value) ? value.map(store) : value;
  const stored = {};
  for (const [key, value] of Object.entries(encodeFields(fields))) stored[key] = store(value);
  return stored;
}

/**
 * A query's `args` (an object of named placeholders, or a list for `%@`),
 * encoded as field values are: a Date as a TIMESTAMP, a BigInt exact, a
 * Location or Reference in the API's form; throws TypeError naming the
 * argument for what has no API form.
 */
export function encodeArguments(args) {
  if (args === null || args === undefined) return null;
  if (Array.isArray(args)) return args.map((value, index) => encodeValue(value, `args[${index}]`));
  if (typeof args !== "object") throw new TypeError("a query's args are an object of named values, or a list for %@");
  const encoded = {};
  for (const [name, value] of Object.entries(args)) {
    if (value !== undefined) encoded[name] = encodeValue(value, `args.${name}`);
  }
  return encoded;
}

/** A record's fields, encoded for a save. */
export function encodeFields(fields) {
  const encoded = {};
  for (const [key, value] of Object.entries(fields ?? {})) {
    if (value === undefined) continue;
    encoded[key] = encodeValue(value, key);
  }
  return encoded;
}

/** A record's fields as the server sent them, decoded. */
export function decodeFields(fields) {
  const decoded = {};
  for (const [key, value] of Object.entries(fields ?? {})) decoded[key] = decodeValue(value);
  return decoded;
}

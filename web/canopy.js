// The console's Canopy: CanopyJS (served by the gateway at /js/) with the
// signed-in person's token, exactly as any web app uses it. Row-level
// security decides everything these calls can see or do. What the console
// adds: signing out when the server refuses the token, and human words
// for errors.

import {Asset, CanopyError, Container, ErrorCode, Location, Reference, parseJSON, stringifyJSON} from "/js/index.js";

export {parseJSON, stringifyJSON};
import {currentToken, issuedPrefix, signOut} from "./session.js";

function signedOut(message) {
  signOut();
  window.dispatchEvent(new CustomEvent("canopy:signed-out", {detail: message}));
}

/**
 * The container for this page. Its token is whatever the session holds
 * now (none: the public database's reads only); a refused token signs the
 * person out rather than being refreshed.
 */
export const container = new Container({
  baseURL: location.origin,
  // A provider's sign-in hands its token to session.js (oidc.js): CanopyJS keeps no copy.
  auth: {storage: "memory"},
  tokenProvider: ({refresh}) => {
    const token = currentToken();
    if (refresh && token) { signedOut("Your sign-in is no longer accepted."); return null; }
    return token;
  },
});

/** The database of a scope ("PRIVATE", "SHARED", "PUBLIC"). */
export const database = (scope) => container.database(scope);

/**
 * A field's value as the console's views and editors hold it: the API's
 * JSON form (docs/API.md §4: `{type: "TIMESTAMP", value}` and the like), an
 * asset with its download URL. CanopyJS reads values as JavaScript
 * (Date, Reference, …); a save takes this form back as it is.
 */
export function formValue(value) {
  if (Array.isArray(value)) return value.map(formValue);
  if (value instanceof Date) return {type: "TIMESTAMP", value: value.getTime()};
  if (value instanceof Reference) return {type: "REFERENCE", recordName: value.recordName, action: value.action};
  if (value instanceof Location) return {...value, type: "LOCATION", ...(value.timestamp ? {timestamp: value.timestamp.getTime()} : {})};
  if (value instanceof Uint8Array) {
    let text = "";
    for (const byte of value) text += String.fromCharCode(byte);
    return {type: "BYTES", base64: btoa(text)};
  }
  if (value instanceof Asset) return {type: "ASSET", sha256: value.sha256, size: value.size, contentType: value.contentType, downloadURL: value.downloadURL};
  return value;
}

/** A CanopyRecord as the console's views hold it: fields in the API's form, stamps in milliseconds. */
export function formRecord(record) {
  const stamp = (value) => value && {timestamp: value.date.getTime(), userRecordName: value.userRecordName};
  return {
    recordName: record.recordName, recordType: record.recordType, recordChangeTag: record.recordChangeTag, parent: record.parent,
    fields: Object.fromEntries(Object.entries(record.fields).map(([name, value]) => [name, formValue(value)])),
    created: stamp(record.created), modified: stamp(record.modified), share: record.share,
  };
}

/** Uploads a file's bytes; answers the Asset to save ({uploadToken, size, sha256}). */
export function upload(file) {
  return container.uploadAsset(file);
}

/** Signs out; a token the console made (a provider sign-in) is revoked first. */
export async function endSession() {
  const prefix = issuedPrefix();
  if (prefix) {
    try { await container.revokeToken(prefix); } catch { /* signed out either way */ }
  }
  container.close();
  signOut();
}

/** Human words for an API error, for a message box. */
export function describe(error) {
  if (!(error instanceof CanopyError)) return `Something went wrong: ${error?.message ?? error}`;
  switch (error.code) {
    case ErrorCode.PERMISSION_FAILURE: return `Not allowed: ${error.message}`;
    case ErrorCode.ZONE_NOT_FOUND: return "This zone does not exist or is no longer shared with you.";
    case ErrorCode.UNKNOWN_ITEM: return "This record does not exist or is no longer shared with you.";
    case ErrorCode.NETWORK_FAILURE: return "The server cannot be reached. Check your connection and try again.";
    default: return error.message;
  }
}

/**
 * Follows a change feed from now on: its end's token (zoneChangeToken,
 * databaseChangeToken) and then a watch over the WebSocket from there, so every
 * change is one made after the view was drawn. `feed` is "zoneChanges"
 * (variables {scope, zone}) or "databaseChanges" ({scope}); answers a
 * function that stops.
 */
export function followChanges(feed, variables, onChange, onError) {
  const controller = new AbortController();
  const db = database(variables.scope);
  const start = async () => {
    try {
      const since = feed === "zoneChanges" ? await db.zoneChangeToken(variables.zone) : await db.databaseChangeToken();
      if (controller.signal.aborted) return;
      const changes = feed === "zoneChanges" ? db.watchZone(variables.zone, {since, signal: controller.signal}) : db.watchDatabase({since, signal: controller.signal});
      for await (const change of changes) onChange(change);
    } catch (error) {
      if (controller.signal.aborted) return;
      // Away longer than the history is kept: follow from now, and say something may have changed.
      if (error.code === ErrorCode.CHANGE_TOKEN_EXPIRED) { onChange({changed: [], deleted: [], expired: true}); start(); return; }
      onError?.(error);
    }
  };
  start();
  return () => controller.abort();
}

// The public database in the console (docs/PUBLIC_DATABASE.md): its one
// zone, and what each record type's grants let the person do, from
// recordTypes' publicAccess. Signed out, the console reads it as nobody
// (what _world may read) and offers no edits.

import {zoneRoute} from "./routes.js";

export const PUBLIC_OWNER = "__defaultOwner__";
export const PUBLIC_ZONE = "_defaultZone";
export const publicRoute = zoneRoute("PUBLIC", PUBLIC_OWNER, PUBLIC_ZONE);

/** What the type's grants allow; a type the server has no entry for gets CloudKit's defaults. */
export function publicAccessOf(schema, recordType, me) {
  const declared = schema.find((type) => type.name === recordType)?.publicAccess;
  if (declared) return declared;
  return {read: true, create: Boolean(me), write: false, writeOwn: Boolean(me)};
}

/** Whether the person may change or delete this record. */
export function mayWrite(access, record, me) {
  return Boolean(me) && (access.write || (access.writeOwn && record.created?.userRecordName === me.userRecordName));
}

/** A sentence saying what the person may do with the type's records. */
export function describeAccess(recordType, access, me) {
  if (!me) return `Signed out: you see the ${recordType} records everyone may read. Sign in to add or change records.`;
  const create = access.create ? "create them" : "not create them";
  const write = access.write ? "change any of them" : access.writeOwn ? "change the ones you created" : "change none of them";
  return `The public database: ${recordType} records. Its grants let you ${access.read ? "read them" : "read only your own"}, ${create}, and ${write}.`;
}

// Reads and writes the declarations refuse: each line marked with the error code tsc
// must report there (typescript.test.js checks every one is reported, and
// nothing else).

import {Container, SyncedDatabase} from "@canopy/client";
import type {Fast} from "./canopy-records";

export async function misuse(container: Container) {
  const [fast] = await container.privateDatabase.query("Z", {recordType: "Fast"}).all();
  const hours: number = fast.fields.hours ?? 0;                 // TS2322: INT64 may be a bigint
  const name = fast.fields.name;                                // TS2339: a Fast has no field "name"
  const note: string = fast.fields.note;                        // TS2322: a field may be absent
  const when: number | undefined = fast.fields.endDate;         // TS2322: a TIMESTAMP is a Date
  return [hours, name, note, when];
}

export async function miswrite(container: Container, synced: SyncedDatabase) {
  const db = container.privateDatabase;
  await db.saveRecord("Z", {recordName: "f", recordType: "Fast", fields: {hours: "16"}});       // TS2322: INT64 is a number or bigint
  await db.saveRecord("Z", {recordName: "f", recordType: "Fast", fields: {hourz: 16}});         // TS2322: a Fast has no field "hourz"
  await db.modify("Z", {save: [{recordName: "c", recordType: "Contact", fields: {name: 42}}]}); // TS2322: a STRING is a string
  await db.modify("Z", {save: [
    {recordName: "u", recordType: "Undeclared", fields: {anything: 1}},
    {recordName: "c", recordType: "Contact", fields: {nam: "Ada"}},                             // TS2322: beside an undeclared type, still checked
  ]});
  await synced.save("Z", {recordName: "f", recordType: "Fast", fields: {endDate: 1_700_000_000_000}});  // TS2322: a TIMESTAMP is a Date
  await synced.save("Z", {recordName: "f", recordType: "Fast", fields: {notes: "x"}});          // TS2322: a Fast has no field "notes"
  const [contact] = await db.query("Z", {recordType: "Contact"}).all();
  await db.saveRecord("Z", {...contact, recordType: "Fast"});                                    // TS2345: a Contact's fields are not a Fast's
  const fasts: Fast[] = synced.records("Z", {recordType: "Contact"});                           // TS2322: the copy's Contacts are not Fasts
  return fasts;
}

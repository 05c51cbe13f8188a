// A program written against the declarations `canopy schema typescript`
// writes for Server/schema/app.ckdb: every read below is typed by the schema, with
// no narrowing but `undefined`. typescript.test.js compiles it with
// --strict, runs it against a live gateway, and checks at run time that each
// value is what its type says.

import {Asset, Container, Location, Reference, isRecordType} from "@canopy/client";
import type {Contact, Fast} from "./canopy-records";

/** Saves one record of each type, reads them back typed; answers what did not match its type. */
export async function run(container: Container, zone: string): Promise<string[]> {
  const db = container.privateDatabase;
  await db.saveZone(zone);
  const photo = await container.uploadAsset(new Uint8Array([1, 2, 3]), {contentType: "image/png"});
  await db.modify(zone, {save: [
    {recordName: "fast-1", recordType: "Fast", fields: {endDate: new Date(1_700_000_000_000), hours: 16, note: "water only", tags: ["long", "summer"]}},
    {recordName: "ada", recordType: "Contact", fields: {name: "Ada", email: "ada@example.com", birthday: new Date(0),
      location: new Location(51.5, -0.12), photo, friend: new Reference("fast-1")}},
  ]});
  const problems: string[] = [];
  const expect = (ok: boolean, what: string) => { if (!ok) problems.push(what); };

  // A query of a declared type answers typed records.
  for await (const fast of db.query(zone, {recordType: "Fast", sort: ["hours"]})) {
    const end: Date | undefined = fast.fields.endDate;
    const hours: number | bigint | undefined = fast.fields.hours;
    const note: string | undefined = fast.fields.note;
    const tags: string[] | undefined = fast.fields.tags;
    const recordType: "Fast" = fast.recordType;
    expect(end instanceof Date && end.getTime() === 1_700_000_000_000, `endDate ${end}`);
    expect(typeof hours === "number" && hours === 16, `hours ${hours}`);
    expect(note?.toUpperCase() === "WATER ONLY", `note ${note}`);
    expect(Array.isArray(tags) && tags.join() === "long,summer", `tags ${tags}`);
    expect(recordType === "Fast", `recordType ${recordType}`);
  }
  const contacts: Contact[] = await db.query(zone, {recordType: "Contact"}).all();
  const ada = contacts[0];
  expect(ada?.fields.name === "Ada", `name ${ada?.fields.name}`);
  expect(ada?.fields.location instanceof Location && ada.fields.location.latitude === 51.5, `location ${JSON.stringify(ada?.fields.location)}`);
  expect(ada?.fields.friend instanceof Reference && ada.fields.friend.recordName === "fast-1", `friend ${JSON.stringify(ada?.fields.friend)}`);
  expect(ada?.fields.photo instanceof Asset && ada.fields.photo.size === 3, `photo ${JSON.stringify(ada?.fields.photo)}`);
  expect(ada?.fields.birthday instanceof Date, `birthday ${ada?.fields.birthday}`);

  // Any record, narrowed by its type.
  const record = await db.fetchRecord(zone, "fast-1");
  if (isRecordType(record, "Fast")) {
    const fast: Fast = record;
    expect(fast.fields.tags?.length === 2, `narrowed tags ${fast.fields.tags}`);
  } else {
    problems.push(`isRecordType did not recognise ${record.recordType}`);
  }
  expect(!isRecordType(record, "Contact"), "a Fast taken for a Contact");

  // A type the schema does not declare reads as before.
  const others = await db.query(zone, {recordType: "Undeclared"}).all();
  const anything = others[0]?.fields.whatever;
  expect(anything === undefined, `an undeclared type's field ${anything}`);
  return problems;
}

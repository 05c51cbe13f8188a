// A program written against the declarations `canopy schema typescript`
// writes for Server/schema/app.ckdb: every read below is typed by the schema, with
// no narrowing but `undefined`. typescript.test.js compiles it with
// --strict, runs it against a live gateway, and checks at run time that each
// value is what its type says.

import {Asset, CanopyRecord, Container, Location, Reference, SyncedDatabase, isRecordType} from "@canopy/client";
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

  // Typed writes: a typed save answers a typed record, and a record read
  // typed goes back to saveRecord and modify as it is.
  const saved: Fast = await db.saveRecord(zone, {recordName: "fast-2", recordType: "Fast", fields: {hours: 2, note: "tea"}});
  expect(saved.fields.hours === 2 && saved.recordType === "Fast", `saveRecord answered ${JSON.stringify(saved.fields)}`);
  const again: Fast = await db.saveRecord(zone, {recordName: "fast-2", recordType: "Fast", recordChangeTag: saved.recordChangeTag,
                                                   fields: {hours: 3n, note: null}}, {savePolicy: "IF_SERVER_RECORD_UNCHANGED_CHANGED_KEYS"});
  expect(again.fields.hours === 3 && again.fields.note === undefined, `saved again ${JSON.stringify(again.fields, (_, v) => typeof v === "bigint" ? `${v}n` : v)}`);
  const [readBack] = await db.query(zone, {recordType: "Fast", filter: "hours == $h", args: {h: 3}}).all();
  if (readBack) {
    readBack.fields.tags = ["moved"];
    const {saved: modified, errors} = await db.modify(zone, {save: [readBack, {recordName: "bob", recordType: "Contact", fields: {name: "Bob", email: null}}]});
    expect(errors.length === 0 && modified.length === 2, `modify: ${errors.map((e) => e.message)}`);
  } else {
    problems.push("the record saved with hours 3 was not found");
  }
  const plain: CanopyRecord = again;
  const everything: CanopyRecord[] = await db.query(zone, {recordType: "Fast"}).all();
  const onlyFasts: Fast[] = everything.filter((r): r is Fast => isRecordType(r, "Fast"));
  expect(onlyFasts.length === 2 && plain.recordName === "fast-2", `filtered ${onlyFasts.length} Fast records`);

  // The same in a SyncedDatabase: typed saves, and its records of one type.
  const synced = await SyncedDatabase.open({database: db, automaticallySync: false});
  try {
    const local: Fast = await synced.save(zone, {recordName: "fast-3", recordType: "Fast", fields: {hours: 5, endDate: new Date(0)}});
    await synced.save(zone, {recordName: "carol", recordType: "Contact", fields: {name: "Carol"}});
    const copied: Fast[] = synced.records(zone, {recordType: "Fast"});
    expect(local.fields.hours === 5 && copied.map((r) => r.recordName).join() === "fast-3", `the copy's Fast records: ${copied.map((r) => r.recordName)}`);
    await synced.sync();
    const sent = await db.fetchRecord(zone, "fast-3");
    expect(isRecordType(sent, "Fast") && sent.fields.endDate?.getTime() === 0, `fast-3 on the server: ${JSON.stringify(sent.fields)}`);
  } finally {
    await synced.close();
  }

  // A type the schema does not declare reads as before.
  const others = await db.query(zone, {recordType: "Undeclared"}).all();
  const anything = others[0]?.fields.whatever;
  expect(anything === undefined, `an undeclared type's field ${anything}`);
  return problems;
}

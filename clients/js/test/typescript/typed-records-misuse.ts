// Reads the declarations refuse: each line marked with the error code tsc
// must report there (typescript.test.js checks every one is reported, and
// nothing else).

import {Container} from "@canopy/client";
import "./canopy-records";

export async function misuse(container: Container) {
  const [fast] = await container.privateDatabase.query("Z", {recordType: "Fast"}).all();
  const hours: number = fast.fields.hours ?? 0;                 // TS2322: INT64 may be a bigint
  const name = fast.fields.name;                                // TS2339: a Fast has no field "name"
  const note: string = fast.fields.note;                        // TS2322: a field may be absent
  const when: number | undefined = fast.fields.endDate;         // TS2322: a TIMESTAMP is a Date
  return [hours, name, note, when];
}

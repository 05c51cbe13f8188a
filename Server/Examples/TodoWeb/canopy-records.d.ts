// Record types of schema.ckdb, for CanopyJS. Written by
// `canopy schema typescript`: write it again when the schema changes
// rather than editing it. Include it in the compilation (tsconfig's
// "include", or `import type {} from "./this-file"`) and a query of a
// declared type answers typed records; `isRecordType(record, "Name")`
// narrows any other record (docs/TYPESCRIPT.md).

import type {TypedRecord} from "@canopy/client";

/** The fields of a record of type Item, as CanopyJS reads them; each is absent when the record has no value. */
export type ItemFields = {
  /** STRING */
  title?: string;
  /** BOOLEAN */
  done?: boolean;
  /** INT64 SORTABLE */
  position?: number | bigint;
};

/** A record of type Item. */
export type Item = TypedRecord<"Item">;

declare module "@canopy/client" {
  interface RecordTypes {
    "Item": ItemFields;
  }
}

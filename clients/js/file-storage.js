// Where a SyncedDatabase keeps its copy in Node: one JSON file, written
// whole to a temporary file, flushed, and renamed over the old one (then
// the folder flushed), so a process killed or a machine stopped at any
// moment leaves the write before or the write after, never half.
// Imported apart (`@canopy/client/file-storage`): pages never load node:fs.

import {mkdir, open, readFile, rename, rm} from "node:fs/promises";
import {dirname} from "node:path";
import {applyWrite} from "./storage.js";

export class FileStorage {
  /** path: the file (its folder is made when missing); `${path}.tmp` is used while writing. */
  constructor(path) {
    if (typeof path !== "string" || !path) throw new TypeError("FileStorage needs a file path");
    this.path = path;
    this.snapshot = null;
  }

  async load() {
    let text;
    try {
      text = await readFile(this.path, "utf8");
    } catch (error) {
      if (error.code === "ENOENT") return null;
      throw error;
    }
    try {
      this.snapshot = JSON.parse(text);
    } catch (error) {
      throw new Error(`${this.path} is not a SyncedDatabase file (${error.message}); move it away to start from nothing`);
    }
    return structuredClone(this.snapshot);
  }

  async write(write) {
    const next = applyWrite(structuredClone(this.snapshot), write);
    await mkdir(dirname(this.path), {recursive: true});
    const temporary = `${this.path}.tmp`;
    const file = await open(temporary, "w");
    try {
      await file.writeFile(JSON.stringify(next));
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, this.path);
    const folder = await open(dirname(this.path), "r");
    try { await folder.sync(); } finally { await folder.close(); }
    this.snapshot = next;
  }

  async clear() {
    this.snapshot = null;
    await rm(this.path, {force: true});
    await rm(`${this.path}.tmp`, {force: true});
  }

  async close() {}
}

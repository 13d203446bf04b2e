import { createHash } from "node:crypto";
import { CorruptShard, StoreError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type ByteSink, composeJournalToStream } from "./compose.js";
import { JournalError } from "./errors.js";
import type { JournalRegistry } from "./registry.js";
import type { JournalRow } from "./row.js";
import { storePartSource } from "./sources.js";
import { writeZip } from "./zip.js";

export const SESSION_INDEX_ENTRY = "index.json";

export interface SessionIndexEntry {
  outputIdentifier: string;
  entry: string;
  partKey: string;
  size: number;
  md5: string;
}

/** A row's own part blob, checked against the size and md5 its row recorded. */
export async function readPartBlob(store: Store, row: JournalRow): Promise<Uint8Array> {
  const { partKey, partSize, partMd5 } = row.config;
  const bytes = await store.get(partKey);
  if (bytes === undefined)
    throw new StoreError(`${row.config.outputIdentifier}: part ${partKey} is missing`, partKey);
  const md5 = createHash("md5").update(bytes).digest("hex");
  if (bytes.length !== partSize || md5 !== partMd5) {
    throw new CorruptShard(
      `${row.config.outputIdentifier}: part ${partKey} is ${bytes.length} bytes md5 ${md5}, row says ${partSize} bytes md5 ${partMd5}`,
      partKey,
    );
  }
  return bytes;
}

/**
 * Seed 004 session export: each row's own part blob is its own zip entry (parts are the data), plus
 * index.json recording each part's md5 and size.
 */
export async function exportSession(registry: JournalRegistry, store: Store): Promise<Uint8Array> {
  const rows = await registry.rows();
  const entries = [];
  const index: SessionIndexEntry[] = [];
  for (const row of rows) {
    const bytes = await readPartBlob(store, row);
    const ext = row.config.journalFormat === "csv" ? "csv" : "ndjson";
    const entry = `parts/${row.config.outputIdentifier}.${ext}`;
    entries.push({ name: entry, bytes });
    index.push({
      outputIdentifier: row.config.outputIdentifier,
      entry,
      partKey: row.config.partKey,
      size: row.config.partSize,
      md5: row.config.partMd5,
    });
  }
  const indexBytes = Buffer.from(`${JSON.stringify({ parts: index }, null, 2)}\n`, "utf8");
  return writeZip([...entries, { name: SESSION_INDEX_ENTRY, bytes: indexBytes }]);
}

/**
 * Streams the state a row describes (default: the current output) by composing its artefactParts from
 * the store under its csvHeaders. Resolves to the bytes written.
 */
export async function composeHeadToStream(
  registry: JournalRegistry,
  store: Store,
  out: ByteSink,
  outputIdentifier?: string,
): Promise<number> {
  const row =
    outputIdentifier === undefined ? await registry.current() : await registry.find(outputIdentifier);
  if (!row) {
    throw new JournalError(
      outputIdentifier === undefined ? "journal has no rows" : `${outputIdentifier} is not registered`,
      "missing-part",
    );
  }
  const parts = row.config.artefactParts.map((key) => storePartSource(store, key));
  return composeJournalToStream(parts, out, {
    format: row.config.journalFormat,
    csvHeaders: row.config.csvHeaders,
  });
}

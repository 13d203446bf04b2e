import { crc32 } from "node:zlib";
import { CorruptShard, StoreError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type ByteSink, digestOf, md5Hex, writeToSink } from "./blob-io.js";
import { composeJournalToStream } from "./compose.js";
import { JournalError } from "./errors.js";
import type { JournalRegistry } from "./registry.js";
import type { JournalRow } from "./row.js";
import { storePartSource } from "./sources.js";
import { type ZipEntrySource, zipBlocks } from "./zip.js";

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
  const md5 = md5Hex(bytes);
  if (bytes.length !== partSize || md5 !== partMd5) {
    throw new CorruptShard(
      `${row.config.outputIdentifier}: part ${partKey} is ${bytes.length} bytes md5 ${md5}, row says ${partSize} bytes md5 ${partMd5}`,
      partKey,
    );
  }
  return bytes;
}

/**
 * Seed 004 session export, streamed: each row's own part blob is its own zip entry (parts are the data),
 * plus index.json recording each part's md5 and size. Every part is first read once and checked against
 * its row (size, md5; CorruptShard otherwise) while its CRC-32 is taken, so nothing is written for a
 * journal that does not hold together; then the archive is written, each part read a second time.
 * Memory stays at a 1 MiB read chunk and the index, whatever the journal's size: chunks are lent, so a
 * callback sink must copy what it keeps, and a stream is waited on until each chunk is written out.
 * Resolves to the bytes written.
 */
export async function exportSessionToStream(
  registry: JournalRegistry,
  store: Store,
  out: ByteSink,
): Promise<number> {
  const rows = await registry.rows();
  const entries: ZipEntrySource[] = [];
  const index: SessionIndexEntry[] = [];
  for (const row of rows) {
    const { outputIdentifier, partKey, partSize, partMd5, journalFormat } = row.config;
    const d = await digestOf(storePartSource(store, partKey, undefined, { lend: true }));
    if (d.size !== partSize || d.md5 !== partMd5) {
      throw new CorruptShard(
        `${outputIdentifier}: part ${partKey} is ${d.size} bytes md5 ${d.md5}, row says ${partSize} bytes md5 ${partMd5}`,
        partKey,
      );
    }
    const entry = `parts/${outputIdentifier}.${journalFormat === "csv" ? "csv" : "ndjson"}`;
    const chunks = storePartSource(store, partKey, undefined, { lend: true });
    entries.push({ name: entry, size: d.size, crc: d.crc, chunks });
    index.push({ outputIdentifier, entry, partKey, size: partSize, md5: partMd5 });
  }
  const indexBytes = Buffer.from(`${JSON.stringify({ parts: index }, null, 2)}\n`, "utf8");
  entries.push({
    name: SESSION_INDEX_ENTRY,
    size: indexBytes.length,
    crc: crc32(indexBytes),
    chunks: async function* () {
      yield indexBytes;
    },
  });
  let written = 0;
  for await (const block of zipBlocks(entries)) {
    written += block.length;
    await writeToSink(out, block, true);
  }
  return written;
}

/** The session export in memory (exportSessionToStream into one buffer); for small journals and tests. */
export async function exportSession(registry: JournalRegistry, store: Store): Promise<Uint8Array> {
  const blocks: Uint8Array[] = [];
  await exportSessionToStream(registry, store, (b) => void blocks.push(Buffer.from(b)));
  return Buffer.concat(blocks);
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
  const parts = row.config.artefactParts.map((key) => storePartSource(store, key, undefined, { lend: true }));
  return composeJournalToStream(parts, out, {
    format: row.config.journalFormat,
    csvHeaders: row.config.csvHeaders,
  });
}

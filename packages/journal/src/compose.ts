import type { JournalFormat } from "@zarr-stream/spec";
import { type ByteSink, writeToSink } from "./blob-io.js";
import { renderCsvHeaderLine, widestHeader } from "./csv-header.js";
import { JournalError, MAX_HEADER_BYTES } from "./errors.js";
import { CompositeWriter } from "./line-composer.js";
import { headerCells } from "./part-rules.js";
import { chunksOf, firstLineOf, type PartSource, readFirstLine } from "./sources.js";

export type { ByteSink };

export interface ComposeOptions {
  format: JournalFormat;
  /**
   * The head's csvHeaders. The composite is written under the widest of these and every part's own
   * header, each of which must be a prefix of it. Omitted: the widest part header.
   */
  csvHeaders?: readonly string[];
  /** Longest first line accepted, in bytes, a leading BOM aside (default MAX_HEADER_BYTES, 1 MiB). */
  maxHeaderBytes?: number;
  /**
   * With a callback sink (or composeJournalBlocks): each chunk is lent and refilled once the callback's
   * promise settles (the next block is pulled), so composing allocates nothing per block (no garbage for
   * the collector on multi-GB journals). The consumer must copy what it keeps.
   */
  reuseBuffers?: boolean;
}

function assertFormat(format: unknown): asserts format is JournalFormat {
  if (format !== "csv" && format !== "ndjson") {
    throw new JournalError(
      `journal format must be "csv" or "ndjson", got ${JSON.stringify(format)}`,
      "format",
    );
  }
}

interface CsvPlan {
  headerLine: string | undefined;
  pads: number[];
}

/**
 * Widths come from each part's own first line (invariant 7), by the rule the producer checks parts with
 * (headerCells), part by part in order so that both composers name the same first offence; the union
 * is the widest header.
 */
function planCsv(headers: string[][], csvHeaders: readonly string[] | undefined): CsvPlan {
  const widths = headers.map((h) => h.length);
  const names = headers.map((_, i) => `part ${i}`);
  if (csvHeaders !== undefined) {
    headers.push([...csvHeaders]);
    names.push("csvHeaders");
  }
  const union = widestHeader(headers, names);
  if (union.length === 0) return { headerLine: undefined, pads: [] };
  return { headerLine: renderCsvHeaderLine(union), pads: widths.map((w) => union.length - w) };
}

async function planCsvParts(parts: readonly PartSource[], options: ComposeOptions): Promise<CsvPlan> {
  const maxBytes = options.maxHeaderBytes ?? MAX_HEADER_BYTES;
  const headers: string[][] = [];
  for (const [i, part] of parts.entries()) {
    const where = `part ${i}`;
    headers.push(headerCells(await readFirstLine(part, maxBytes, where), where, { maxBytes }));
  }
  return planCsv(headers, options.csvHeaders);
}

async function* composeBlocks(
  parts: readonly PartSource[],
  options: ComposeOptions,
  writer: CompositeWriter,
): AsyncGenerator<Uint8Array> {
  let pads = parts.map(() => 0);
  if (options.format === "csv") {
    const plan = await planCsvParts(parts, options);
    // Invariant 5: no header at all means an empty composite, not a bare CRLF.
    if (plan.headerLine === undefined) return;
    writer.header(plan.headerLine);
    pads = plan.pads;
  }
  for (const [i, part] of parts.entries()) {
    const rewriter = writer.part(pads[i] ?? 0, `part ${i}`);
    for await (const chunk of chunksOf(part)) {
      for (let pos = 0; pos < chunk.length; ) {
        pos = rewriter.feed(chunk, pos);
        yield* writer.drain();
      }
    }
    rewriter.finish();
  }
  writer.end();
  yield* writer.drain();
}

/**
 * The composite as a sequence of blocks pulled one at a time: what a compaction streams into the store.
 * Blocks are fresh (a consumer may keep each) unless `reuseBuffers`, where each is lent until the next is
 * pulled and then refilled, as a store's putStream allows. Refusals (PartRefused) come before the first
 * block when a header breaks a rule, else when the offending line is reached.
 */
export async function* composeJournalBlocks(
  parts: readonly PartSource[],
  options: ComposeOptions,
): AsyncGenerator<Uint8Array> {
  assertFormat(options.format);
  const writer = new CompositeWriter(options.format);
  for await (const block of composeBlocks(parts, options, writer)) {
    yield block;
    if (options.reuseBuffers) writer.recycle(block);
  }
}

/**
 * Seed 004 composer (invariants 1-7), byte-exact: CSV = union header line, then each part's lines after
 * its first, padded to the union width, CRLF-terminated; NDJSON = concatenation. Parts are streamed, so
 * memory stays at one header line plus fixed 64 KiB output blocks whatever the journal's size.
 * Resolves to the number of bytes written. A part that breaks a part rule is a PartRefused, possibly
 * after the lines before it were written.
 */
export async function composeJournalToStream(
  parts: readonly PartSource[],
  out: ByteSink,
  options: ComposeOptions,
): Promise<number> {
  assertFormat(options.format);
  const writer = new CompositeWriter(options.format);
  const lend = options.reuseBuffers === true && typeof out === "function";
  let written = 0;
  for await (const block of composeBlocks(parts, options, writer)) {
    written += block.length;
    await writeToSink(out, block);
    if (lend) writer.recycle(block);
  }
  return written;
}

/** The whole composite in memory; for small journals and tests. */
export async function composeJournalAsync(
  parts: readonly PartSource[],
  options: ComposeOptions,
): Promise<Uint8Array> {
  const blocks: Uint8Array[] = [];
  await composeJournalToStream(parts, (b) => void blocks.push(b), options);
  return Buffer.concat(blocks);
}

/**
 * The composite of in-memory parts (seed 004 invariants 1-7), byte for byte what composeJournalToStream
 * writes, refusing what it refuses: both run the same header rule (headerCells) and the same rewriter.
 * `csvHeaders` is the head's union when known; otherwise the widest part header is used.
 */
export function composeJournal(
  parts: readonly Uint8Array[],
  format: JournalFormat,
  options: { csvHeaders?: readonly string[]; maxHeaderBytes?: number } = {},
): Uint8Array {
  assertFormat(format);
  const writer = new CompositeWriter(format);
  let pads = parts.map(() => 0);
  if (format === "csv") {
    const maxBytes = options.maxHeaderBytes ?? MAX_HEADER_BYTES;
    const headers = parts.map((part, i) => headerCells(firstLineOf(part), `part ${i}`, { maxBytes }));
    const plan = planCsv(headers, options.csvHeaders);
    if (plan.headerLine === undefined) return new Uint8Array(0);
    writer.header(plan.headerLine);
    pads = plan.pads;
  }
  const blocks: Uint8Array[] = [];
  parts.forEach((part, i) => {
    const rewriter = writer.part(pads[i] ?? 0, `part ${i}`);
    for (let pos = 0; pos < part.length; ) {
      pos = rewriter.feed(part, pos);
      blocks.push(...writer.drain());
    }
    rewriter.finish();
  });
  writer.end();
  blocks.push(...writer.drain());
  return Buffer.concat(blocks);
}

import { once } from "node:events";
import type { Writable } from "node:stream";
import type { JournalFormat } from "@zarr-stream/spec";
import { csvWidth, parseCsvHeaderLine, renderCsvHeaderLine, widestHeader } from "./csv-header.js";
import { JournalError } from "./errors.js";
import { CompositeWriter } from "./line-composer.js";
import { assertCsvLineSafe } from "./part-check.js";
import { chunksOf, type FirstLine, firstLineOf, type PartSource, readFirstLine } from "./sources.js";

/**
 * Where composed bytes go: a Node writable stream (back-pressure honoured) or a callback, awaited before
 * the next chunk. Chunks are the sink's to keep unless ComposeOptions.reuseBuffers is set.
 */
export type ByteSink = NodeJS.WritableStream | ((chunk: Uint8Array) => void | Promise<void>);

export interface ComposeOptions {
  format: JournalFormat;
  /**
   * The head's csvHeaders. The composite is written under the widest of these and every part's own
   * header, each of which must be a prefix of it. Omitted: the widest part header.
   */
  csvHeaders?: readonly string[];
  /** Longest first line accepted, in bytes (default 1 MiB). */
  maxHeaderBytes?: number;
  /**
   * Only with a callback sink: each chunk is lent and refilled once the callback's promise settles, so
   * composing allocates nothing per block (no garbage for the collector on multi-GB journals). The
   * callback must copy what it keeps.
   */
  reuseBuffers?: boolean;
}

const DEFAULT_MAX_HEADER = 1 << 20;

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

/** Widths come from each part's own first line (invariant 7); the union is the widest header. */
function planCsv(firsts: readonly FirstLine[], csvHeaders: readonly string[] | undefined): CsvPlan {
  const headers: string[][] = [];
  const names: string[] = [];
  const widths = firsts.map((first, i) => {
    const width = csvWidth(first.line);
    if (width === 0 && first.hasBody)
      throw new JournalError(`part ${i}: has rows but an empty header line`, "part");
    headers.push(parseCsvHeaderLine(Buffer.from(first.line).toString("utf8")));
    names.push(`part ${i}`);
    return width;
  });
  if (csvHeaders !== undefined) {
    headers.push([...csvHeaders]);
    names.push("csvHeaders");
  }
  const union = widestHeader(headers, names);
  if (union.length === 0) return { headerLine: undefined, pads: [] };
  return { headerLine: renderCsvHeaderLine(union), pads: widths.map((w) => union.length - w) };
}

async function planCsvParts(parts: readonly PartSource[], options: ComposeOptions): Promise<CsvPlan> {
  const maxLine = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER;
  const firsts: FirstLine[] = [];
  for (const [i, part] of parts.entries()) firsts.push(await readFirstLine(part, maxLine, `part ${i}`));
  return planCsv(firsts, options.csvHeaders);
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
    const rewriter = writer.part(pads[i] ?? 0);
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
 * Seed 004 composer (invariants 1-7), byte-exact: CSV = union header line, then each part's lines after
 * its first, padded to the union width, CRLF-terminated; NDJSON = concatenation. Parts are streamed, so
 * memory stays at one header line plus fixed 64 KiB output blocks whatever the journal's size.
 * Resolves to the number of bytes written.
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
    if (typeof out === "function") await out(block);
    else if (!out.write(block)) await once(out as Writable, "drain");
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
 * writes. `csvHeaders` is the head's union when known; otherwise the widest part header is used.
 */
export function composeJournal(
  parts: readonly Uint8Array[],
  format: JournalFormat,
  options: { csvHeaders?: readonly string[] } = {},
): Uint8Array {
  assertFormat(format);
  const writer = new CompositeWriter(format);
  let pads = parts.map(() => 0);
  if (format === "csv") {
    // Padding is line-wise (invariant 3), so a cell spanning lines would be padded inside its quotes.
    for (const [i, part] of parts.entries()) assertCsvLineSafe(part, `part ${i}`);
    const plan = planCsv(parts.map(firstLineOf), options.csvHeaders);
    if (plan.headerLine === undefined) return new Uint8Array(0);
    writer.header(plan.headerLine);
    pads = plan.pads;
  }
  const blocks: Uint8Array[] = [];
  parts.forEach((part, i) => {
    const rewriter = writer.part(pads[i] ?? 0);
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

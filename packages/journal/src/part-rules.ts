import type { JournalFormat } from "@zarr-stream/spec";
import { parseCsvHeaderLine, renderCsvHeaderLine } from "./csv-header.js";
import { headerTooLong, MAX_HEADER_BYTES, PartRefused } from "./errors.js";
import { asBuffer, checkPartBody, rewritePartBody, startsWithBom } from "./line-composer.js";
import { firstLineOf } from "./sources.js";

const LF = 0x0a;
const CR = 0x0d;
const CRLF = Buffer.from("\r\n");
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The cells of a CSV part's first line (without its terminator), checked by the rules the producer and
 * every reader share: a leading BOM is not part of the first cell; the line, BOM aside, is at most
 * `maxBytes` long ("header-too-long"); it holds no CR ("bare-cr") and closes its quotes
 * ("line-break-in-cell"); an empty line has no cells and may not head data lines ("empty-header").
 * `strict` (the producer) also refuses a line that is not UTF-8 ("header-encoding"); readers decode
 * leniently so that parts stored before the rule still compose.
 */
export function headerCells(
  first: { line: Uint8Array; hasBody: boolean },
  where: string,
  options: { maxBytes?: number; strict?: boolean } = {},
): string[] {
  const maxBytes = options.maxBytes ?? MAX_HEADER_BYTES;
  const line = asBuffer(startsWithBom(first.line) ? first.line.subarray(3) : first.line);
  if (line.length > maxBytes) throw headerTooLong(where, maxBytes);
  if (line.indexOf(CR) >= 0)
    throw new PartRefused(`${where}: line 1: a CR that does not end a line`, "bare-cr");
  let text: string;
  if (options.strict) {
    try {
      text = strictUtf8.decode(line);
    } catch {
      throw new PartRefused(`${where}: the header line is not UTF-8`, "header-encoding");
    }
  } else {
    text = line.toString("utf8");
  }
  const cells = parseCsvHeaderLine(text, where);
  if (cells.length === 0 && first.hasBody) {
    throw new PartRefused(`${where}: has data lines under an empty header line`, "empty-header");
  }
  return cells;
}

/** A part as it is stored: checked, and in the form the invariants describe. */
export interface StoredPart {
  bytes: Uint8Array;
  /** CSV: the part's header cells; NDJSON: empty. */
  header: string[];
}

/**
 * The producer's side of the part rules (README, "What a part may hold"), applied before anything is
 * uploaded: a leading BOM is dropped; CSV lines end CRLF and NDJSON lines LF, the last one included
 * (invariants 2 and 4); anything else that would make a reader refuse or misplace cells is a
 * PartRefused. A part already in that form is returned as it is, without a copy.
 */
export function storedPart(part: Uint8Array, format: JournalFormat, where: string): StoredPart {
  const bytes = asBuffer(part);
  const stored =
    format === "csv" ? storedCsv(bytes, where) : { bytes: storedNdjson(bytes, where), header: [] };
  return stored.bytes === bytes ? { ...stored, bytes: part } : stored;
}

/** Leading BOMs, all of them, so that a stored part never starts with one (readers drop only the first). */
function withoutBoms(part: Buffer): Buffer {
  let start = 0;
  while (startsWithBom(part.subarray(start))) start += 3;
  return start === 0 ? part : part.subarray(start);
}

function storedCsv(part: Buffer, where: string): StoredPart {
  const body = withoutBoms(part);
  const bom = body !== part;
  const first = firstLineOf(body);
  const header = headerCells(first, where, { strict: true });
  const options = { format: "csv" as const, pad: 0, where, rowWidth: header.length };
  const { modified } = checkPartBody(body, options);
  const nl = body.indexOf(LF);
  const headerEndsCrlf = nl > 0 && body[nl - 1] === CR;
  if (!bom && !modified && (body.length === 0 || headerEndsCrlf)) return { bytes: part, header };
  if (body.length === 0) return { bytes: new Uint8Array(0), header };
  const stored = Buffer.concat([first.line, CRLF, ...rewritePartBody(body, options)]);
  return { bytes: stored, header };
}

/** NDJSON lines are not parsed; only their terminators and a leading BOM are the producer's concern. */
function storedNdjson(part: Buffer, where: string): Uint8Array {
  const body = withoutBoms(part);
  let crs = 0;
  for (let cr = body.indexOf(CR); cr >= 0; cr = body.indexOf(CR, cr + 1)) {
    // As in CSV, a CR ends a line only before an LF or as the part's last byte.
    if (body[cr + 1] !== LF && cr !== body.length - 1) {
      let line = 1;
      for (let i = body.indexOf(LF); i >= 0 && i < cr; i = body.indexOf(LF, i + 1)) line++;
      throw new PartRefused(`${where}: line ${line}: a CR that does not end a line`, "bare-cr");
    }
    crs++;
  }
  const terminated = body.length === 0 || body[body.length - 1] === LF;
  if (body === part && crs === 0 && terminated) return part;
  const out = Buffer.allocUnsafe(body.length - crs + (terminated ? 0 : 1));
  let n = 0;
  let from = 0;
  for (let cr = body.indexOf(CR); cr >= 0; cr = body.indexOf(CR, cr + 1)) {
    n += body.copy(out, n, from, cr);
    from = cr + 1;
  }
  n += body.copy(out, n, from);
  // A final CR was dropped above and stands for the terminator added here.
  if (n < out.length) out[n] = LF;
  return out;
}

/**
 * The journal's merged header must itself be readable: a compaction writes it as its blob's first line,
 * which every reader caps at MAX_HEADER_BYTES.
 */
export function checkMergedHeader(csvHeaders: readonly string[], where: string): void {
  const bytes = Buffer.byteLength(renderCsvHeaderLine(csvHeaders), "utf8");
  if (bytes > MAX_HEADER_BYTES) {
    throw headerTooLong(where, MAX_HEADER_BYTES, `the merged header line (${bytes} bytes)`);
  }
}

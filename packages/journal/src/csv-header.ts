import { JournalError } from "./errors.js";

const QUOTE = 0x22;
const COMMA = 0x2c;

/**
 * Cells of one CSV header line (no terminator). Quoted cells may hold commas and doubled quotes, so a
 * width is never a plain comma count (invariant 7). An empty line has no cells.
 */
export function parseCsvHeaderLine(line: string): string[] {
  if (line === "") return [];
  const cells: string[] = [];
  let cell = "";
  let i = 0;
  while (i <= line.length) {
    if (line.charCodeAt(i) === QUOTE) {
      i++;
      for (;;) {
        if (i >= line.length)
          throw new JournalError(`header line ${JSON.stringify(line)} has an unclosed quote`, "part");
        if (line.charCodeAt(i) === QUOTE) {
          if (line.charCodeAt(i + 1) === QUOTE) {
            cell += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        cell += line[i];
        i++;
      }
    }
    const comma = line.indexOf(",", i);
    const end = comma < 0 ? line.length : comma;
    cell += line.slice(i, end);
    cells.push(cell);
    cell = "";
    if (comma < 0) break;
    i = comma + 1;
    if (i === line.length) {
      cells.push("");
      break;
    }
  }
  return cells;
}

/** Number of cells in a header line given as bytes (quote-aware), without decoding the rest. */
export function csvWidth(line: Uint8Array): number {
  if (line.length === 0) return 0;
  let width = 1;
  let quoted = false;
  for (const byte of line) {
    if (byte === QUOTE) quoted = !quoted;
    else if (byte === COMMA && !quoted) width++;
  }
  return width;
}

/** One header line the way Python's csv.writer (QUOTE_MINIMAL) writes it, without terminator. */
export function renderCsvHeaderLine(cells: readonly string[]): string {
  if (cells.length === 1 && cells[0] === "") return '""';
  return cells.map((c) => (/[",\r\n]/.test(c) ? `"${c.replaceAll('"', '""')}"` : c)).join(",");
}

function isPrefix(prefix: readonly string[], of: readonly string[]): boolean {
  return prefix.length <= of.length && prefix.every((cell, i) => of[i] === cell);
}

/**
 * The head's csvHeaders after a part with `incoming` header: only ever appends to `existing`, so every
 * earlier part header stays a prefix (invariant 1). A narrower or equal header changes nothing; a wider
 * one that extends `existing` is taken whole (duplicate column names survive); otherwise the new names
 * are appended in their order.
 */
export function mergeCsvHeaders(existing: readonly string[], incoming: readonly string[]): string[] {
  if (isPrefix(incoming, existing)) return [...existing];
  if (isPrefix(existing, incoming)) return [...incoming];
  const known = new Set(existing);
  return [...existing, ...incoming.filter((cell) => !known.has(cell))];
}

/** Invariant 1: throws JournalError naming `where` unless `partHeader` is a prefix of `headers`. */
export function assertHeaderPrefix(
  partHeader: readonly string[],
  headers: readonly string[],
  where: string,
): void {
  if (!isPrefix(partHeader, headers)) {
    throw new JournalError(
      `${where}: header ${JSON.stringify(partHeader)} is not a prefix of the journal header ${JSON.stringify(headers)}`,
      "header-prefix",
    );
  }
}

/**
 * The widest of several headers, each of which must be a prefix of it: the union a composite is written
 * under. `where[i]` names headers[i] in the error.
 */
export function widestHeader(headers: readonly (readonly string[])[], where: readonly string[]): string[] {
  let widest: readonly string[] = [];
  for (const h of headers) if (h.length > widest.length) widest = h;
  for (const [i, h] of headers.entries()) assertHeaderPrefix(h, widest, where[i] ?? `header ${i}`);
  return [...widest];
}

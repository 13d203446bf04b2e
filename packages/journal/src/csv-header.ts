import { PartRefused } from "./errors.js";

const QUOTE = 0x22;
const COMMA = 0x2c;

/**
 * Where a CSV scanner stands inside a line: at the start of a cell, inside an unquoted cell, inside a
 * quoted cell, or just after a quote inside a quoted cell (the end of the cell, or the first of a doubled
 * quote). Line terminators are never fed to csvStep; a line that ends in QUOTED has a cell spanning lines.
 */
export const CELL_START = 0;
export const UNQUOTED = 1;
export const QUOTED = 2;
export const QUOTE_IN_QUOTED = 3;
export type CsvState = typeof CELL_START | typeof UNQUOTED | typeof QUOTED | typeof QUOTE_IN_QUOTED;
/** csvStep flags: the byte ends the current cell (a separator), or is part of the cell's text. */
export const ENDS_CELL = 4;
export const KEEPS = 8;

/**
 * The one CSV rule every reader and the producer share (header widths, header cells, data row widths, and
 * whether a line closes its quotes): Python's csv reader with the default dialect, which is what reads
 * these files downstream. A quote opens a quoted cell only at the start of a cell; inside an unquoted cell
 * it is text (`a,b"c,d` is three cells); `""` inside a quoted cell is one quote; after a quoted cell
 * closes, further text joins the cell (`"ab"c` is `abc`). Returns the next state, with ENDS_CELL and
 * KEEPS flags.
 */
export function csvStep(state: CsvState, byte: number): number {
  switch (state) {
    case CELL_START:
      if (byte === COMMA) return CELL_START | ENDS_CELL;
      return byte === QUOTE ? QUOTED : UNQUOTED | KEEPS;
    case UNQUOTED:
      return byte === COMMA ? CELL_START | ENDS_CELL : UNQUOTED | KEEPS;
    case QUOTED:
      return byte === QUOTE ? QUOTE_IN_QUOTED : QUOTED | KEEPS;
    default:
      if (byte === QUOTE) return QUOTED | KEEPS;
      return byte === COMMA ? CELL_START | ENDS_CELL : UNQUOTED | KEEPS;
  }
}

function unclosed(line: string, where: string): PartRefused {
  return new PartRefused(
    `${where}: line 1 (${JSON.stringify(line.slice(0, 200))}): a quoted cell does not close on its line`,
    "line-break-in-cell",
  );
}

/**
 * Cells of one CSV header line (no terminator), by csvStep. Quoted cells may hold commas and doubled
 * quotes, so a width is never a plain comma count (invariant 7). An empty line has no cells.
 */
export function parseCsvHeaderLine(line: string, where = "header"): string[] {
  if (line === "") return [];
  const cells: string[] = [];
  let state: CsvState = CELL_START;
  let cell = "";
  for (let i = 0; i < line.length; i++) {
    const code = line.charCodeAt(i);
    const step = csvStep(state, code);
    if (step & KEEPS) cell += line[i];
    if (step & ENDS_CELL) {
      cells.push(cell);
      cell = "";
    }
    state = (step & 3) as CsvState;
  }
  if (state === QUOTED) throw unclosed(line, where);
  cells.push(cell);
  return cells;
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

/** Invariant 1: throws PartRefused ("header-prefix") naming `where` unless `partHeader` is a prefix of `headers`. */
export function assertHeaderPrefix(
  partHeader: readonly string[],
  headers: readonly string[],
  where: string,
): void {
  if (!isPrefix(partHeader, headers)) {
    throw new PartRefused(
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

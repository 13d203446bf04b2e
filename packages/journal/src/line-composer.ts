import type { JournalFormat } from "@zarr-stream/spec";
import {
  CELL_START,
  type CsvState,
  csvStep,
  ENDS_CELL,
  QUOTE_IN_QUOTED,
  QUOTED,
  UNQUOTED,
} from "./csv-header.js";
import { PartRefused } from "./errors.js";

const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const COMMA = 0x2c;
/** The UTF-8 byte order mark. At the start of a part it is an encoding mark, not data (README). */
export const UTF8_BOM: Buffer = Buffer.from([0xef, 0xbb, 0xbf]);
/** Output is handed on in blocks of this size: the only buffers whose size does not depend on the input. */
export const OUTPUT_BLOCK = 1 << 16;
/** A feed stops at the next line boundary once this many blocks wait, so output waiting is bounded. */
const MAX_READY = 4;

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function startsWithBom(bytes: Uint8Array): boolean {
  return bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
}

/** Where `byte` next occurs at or after `from`; Infinity when it does not. */
function nextIndex(bytes: Buffer, byte: number, from: number): number {
  const at = bytes.indexOf(byte, from);
  return at < 0 ? Number.POSITIVE_INFINITY : at;
}

/** Where a rewriter's bytes go. */
interface ByteWriter {
  /** Full blocks waiting to be handed on; a rewriter pauses at a line boundary when MAX_READY wait. */
  readonly ready: readonly Uint8Array[];
  write(source: Buffer, start: number, end: number): void;
}

/** Fills fixed-size blocks; full ones wait in `ready`. Blocks are never reused, so a sink may keep them. */
class BlockWriter implements ByteWriter {
  private block: Buffer = Buffer.allocUnsafe(OUTPUT_BLOCK);
  private used = 0;
  private readonly free: Buffer[] = [];
  ready: Uint8Array[] = [];

  write(source: Buffer, start: number, end: number): void {
    while (start < end) {
      const n = Math.min(end - start, OUTPUT_BLOCK - this.used);
      source.copy(this.block, this.used, start, start + n);
      this.used += n;
      start += n;
      if (this.used === OUTPUT_BLOCK) this.take();
    }
  }

  flush(): void {
    if (this.used > 0) this.take();
  }

  drain(): Uint8Array[] {
    const out = this.ready;
    this.ready = [];
    return out;
  }

  /** Takes back a block handed out earlier, once its consumer is done with it, to be filled again. */
  recycle(block: Uint8Array): void {
    if (block.buffer.byteLength === OUTPUT_BLOCK && this.free.length <= MAX_READY) {
      this.free.push(Buffer.from(block.buffer, 0, OUTPUT_BLOCK));
    }
  }

  private take(): void {
    this.ready.push(this.block.subarray(0, this.used));
    this.block = this.free.pop() ?? Buffer.allocUnsafe(OUTPUT_BLOCK);
    this.used = 0;
  }
}

/** Discards what is written: the producer's check pass, which only needs the verdict. */
const NO_OUTPUT: ByteWriter = { ready: [], write: () => {} };

export interface RewriterOptions {
  format: JournalFormat;
  /** Commas added before each CSV line's terminator: the union's width minus the part's. */
  pad: number;
  /** Names the part in errors ("part 2", "journal-p000007"). */
  where: string;
  /**
   * The producer's check: every CSV data line must have this many cells (PartRefused "row-width").
   * Readers leave it out and pad by the header's width whatever the lines hold.
   */
  rowWidth?: number;
}

/**
 * Rewrites one part's bytes into the composite, holding no line, and checks as it goes the rules every
 * reader shares with the producer (README, "What a part may hold"): a CR ends a line only as CRLF or as
 * the part's last byte ("bare-cr"), and a quoted CSV cell closes on its own line ("line-break-in-cell"),
 * because padding is line-wise (invariant 3) and would otherwise land inside a cell. CSV skips the part's
 * header line, pads each later line with `,` × pad and ends it with CRLF (invariants 3-5); NDJSON passes
 * bytes through after a leading BOM. Either way a missing final terminator is added (invariant 2). Both
 * composers and the producer run this one class, so they accept, refuse and write the same bytes.
 */
export class PartRewriter {
  private readonly format: JournalFormat;
  private readonly where: string;
  private readonly rowWidth: number | undefined;
  private readonly ending: Buffer;
  private skippingHeader: boolean;
  /** Csv: where the scanner stands in the current line (csvStep). */
  private state: CsvState = CELL_START;
  /** Cell separators seen on the current CSV line (counted only with rowWidth). */
  private separators = 0;
  /** Bytes of the current line were read and its terminator was not. */
  private lineOpen = false;
  /** A CR ended the previous chunk: a terminator if an LF follows, a bare CR otherwise. */
  private pendingCr = false;
  /** NDJSON: how many bytes of a leading BOM were matched so far; -1 once the part's start is behind. */
  private bom = 0;
  /** The chunk the cached search results below belong to. */
  private searched: Uint8Array | undefined;
  private cr = -1;
  private quote = -1;
  /** 1-based line of the part being read; the header is line 1. */
  private line = 1;
  /** The output differs from the input beyond the header line (a terminator rewritten or added, padding). */
  modified: boolean;

  constructor(
    private readonly out: ByteWriter,
    options: RewriterOptions,
  ) {
    const { format, pad } = options;
    this.format = format;
    this.where = options.where;
    this.rowWidth = options.rowWidth;
    this.skippingHeader = format === "csv";
    this.modified = pad > 0;
    if (format === "csv") {
      this.ending = Buffer.alloc(pad + 2, COMMA);
      this.ending[pad] = CR;
      this.ending[pad + 1] = LF;
    } else {
      this.ending = Buffer.from([LF]);
    }
  }

  /**
   * Consumes `chunk` from `from` and returns where it stopped: the chunk's end, or an earlier line
   * boundary when output blocks are waiting. The caller drains them and calls again from there.
   */
  feed(chunk: Uint8Array, from = 0): number {
    const bytes = asBuffer(chunk);
    if (this.format === "ndjson") return this.feedNdjson(bytes, from);
    let pos = from;
    const len = bytes.length;
    if (this.skippingHeader) {
      const nl = bytes.indexOf(LF, pos);
      if (nl < 0) return len;
      this.skippingHeader = false;
      this.line = 2;
      pos = nl + 1;
    }
    const out = this.out;
    const unpadded = this.ending.length === 2;
    // Bytes [copyFrom, pos) were read and not yet written: lines already in composite form (CRLF, no
    // padding) are copied in runs of up to one output block rather than line by line.
    let copyFrom = pos;
    // The next CR and quote at or after pos (Infinity: none in this chunk). Lines are found with native
    // searches; only a line holding a quote is walked byte by byte (csvStep). A feed that stops early is
    // called again with the same chunk from where it stopped (never 0), and must not search the chunk's
    // rest for a quote again; a call from 0 is a new chunk, even in a buffer a source refills.
    if (from === 0 || chunk !== this.searched) {
      this.searched = chunk;
      this.cr = -1;
      this.quote = -1;
    }
    let cr = this.cr;
    let quote = this.quote;
    while (pos < len) {
      if (this.pendingCr) {
        this.pendingCr = false;
        if (bytes[pos] !== LF) throw this.bareCr();
        this.endLine();
        out.write(this.ending, 0, this.ending.length);
        copyFrom = ++pos;
        if (out.ready.length >= MAX_READY) {
          this.cr = cr;
          this.quote = quote;
          return pos;
        }
        continue;
      }
      const nl = bytes.indexOf(LF, pos);
      const lineEnd = nl < 0 ? len : nl;
      if (cr < pos) cr = nextIndex(bytes, CR, pos);
      let contentEnd = lineEnd;
      if (cr < lineEnd) {
        // A CR may only end the line (CRLF) or the chunk, where the next byte decides.
        if (cr !== lineEnd - 1) throw this.bareCr();
        contentEnd = cr;
      }
      if (quote < pos) quote = nextIndex(bytes, QUOTE, pos);
      if (quote < contentEnd || this.state === QUOTED || this.state === QUOTE_IN_QUOTED) {
        this.scan(bytes, pos, contentEnd);
        if (contentEnd > pos) this.lineOpen = true;
      } else if (contentEnd > pos) {
        if (this.rowWidth !== undefined) {
          for (let i = pos; i < contentEnd; i++) if (bytes[i] === COMMA) this.separators++;
        }
        // Only a line that goes on in the next chunk needs its state kept; an ended one starts afresh.
        if (nl < 0) this.state = bytes[contentEnd - 1] === COMMA ? CELL_START : UNQUOTED;
        this.lineOpen = true;
      }
      if (nl < 0) {
        // The line goes on in the next chunk; a CR at this chunk's end waits for the byte after it.
        out.write(bytes, copyFrom, contentEnd);
        this.pendingCr = contentEnd < len;
        return len;
      }
      this.endLine();
      if (unpadded && contentEnd < nl) {
        if (nl + 1 - copyFrom >= OUTPUT_BLOCK) {
          out.write(bytes, copyFrom, nl + 1);
          copyFrom = nl + 1;
        }
      } else {
        // An LF alone becomes CRLF (invariant 4), and padding goes before the terminator (invariant 3).
        if (contentEnd === nl) this.modified = true;
        out.write(bytes, copyFrom, contentEnd);
        out.write(this.ending, 0, this.ending.length);
        copyFrom = nl + 1;
      }
      pos = nl + 1;
      if (out.ready.length >= MAX_READY) {
        out.write(bytes, copyFrom, pos);
        this.cr = cr;
        this.quote = quote;
        return pos;
      }
    }
    out.write(bytes, copyFrom, len);
    return len;
  }

  /** Walks line content holding a quote (or continuing a quoted cell) byte by byte, by csvStep. */
  private scan(bytes: Buffer, from: number, to: number): void {
    let state = this.state;
    let separators = 0;
    for (let i = from; i < to; i++) {
      const step = csvStep(state, bytes[i]!);
      if (step & ENDS_CELL) separators++;
      state = (step & 3) as CsvState;
    }
    this.state = state;
    if (this.rowWidth !== undefined) this.separators += separators;
  }

  /** The part has ended: closes its last line (invariant 2) or refuses a quote left open. */
  finish(): void {
    if (this.format === "ndjson") {
      if (this.bom > 0) {
        // The part ended inside what looked like a BOM: those bytes were data.
        this.out.write(UTF8_BOM, 0, this.bom);
        this.lineOpen = true;
      }
      if (this.lineOpen) {
        this.out.write(this.ending, 0, 1);
        this.modified = true;
      }
    } else if (!this.skippingHeader && (this.lineOpen || this.pendingCr)) {
      // A CR at the very end of the part is taken as its final terminator.
      this.endLine();
      this.out.write(this.ending, 0, this.ending.length);
      this.modified = true;
    }
    this.bom = -1;
    this.lineOpen = false;
    this.pendingCr = false;
  }

  /** A CSV line ends: its quotes must be closed and, for the producer, its width the header's. */
  private endLine(): void {
    if (this.rowWidth === undefined && this.state === CELL_START) {
      // The common case, kept short: a reader's line that held no quote.
      this.lineOpen = false;
      this.line++;
      return;
    }
    if (this.state === QUOTED) throw this.lineBreakInCell();
    if (this.rowWidth !== undefined) {
      const cells = this.lineOpen ? this.separators + 1 : 0;
      if (cells !== this.rowWidth) {
        throw this.refuse(`${cells} cells under a header of ${this.rowWidth}`, "row-width");
      }
    }
    this.state = CELL_START;
    this.separators = 0;
    this.lineOpen = false;
    this.line++;
  }

  private feedNdjson(bytes: Buffer, from: number): number {
    let pos = from;
    const len = bytes.length;
    while (this.bom >= 0 && this.bom < 3 && pos < len) {
      if (bytes[pos] !== UTF8_BOM[this.bom]) {
        // Not a BOM after all: the bytes matched so far are data.
        if (this.bom > 0) this.out.write(UTF8_BOM, 0, this.bom);
        this.bom = -1;
        break;
      }
      this.bom++;
      pos++;
    }
    if (this.bom === 3) {
      this.bom = -1;
      this.modified = true;
    }
    if (this.bom >= 0) return len;
    const end = Math.min(len, pos + OUTPUT_BLOCK * MAX_READY);
    if (end > pos) {
      this.out.write(bytes, pos, end);
      this.lineOpen = bytes[end - 1] !== LF;
    }
    return end;
  }

  private bareCr(): PartRefused {
    return this.refuse("a CR that does not end a line", "bare-cr");
  }

  private lineBreakInCell(): PartRefused {
    return this.refuse("a quoted cell does not close on its line", "line-break-in-cell");
  }

  private refuse(what: string, rule: "bare-cr" | "line-break-in-cell" | "row-width"): PartRefused {
    return new PartRefused(`${this.where}: line ${this.line}: ${what}`, rule);
  }
}

/** Composite writer: a header line, then parts rewritten one after another into shared output blocks. */
export class CompositeWriter {
  private readonly out = new BlockWriter();

  constructor(private readonly format: JournalFormat) {}

  header(cells: string): void {
    const line = Buffer.from(`${cells}\r\n`, "utf8");
    this.out.write(line, 0, line.length);
  }

  part(pad: number, where: string): PartRewriter {
    return new PartRewriter(this.out, { format: this.format, pad, where });
  }

  /** Flushes the last partial block. */
  end(): void {
    this.out.flush();
  }

  /** Full blocks written so far, handed over once. */
  drain(): Uint8Array[] {
    return this.out.drain();
  }

  recycle(block: Uint8Array): void {
    this.out.recycle(block);
  }
}

/**
 * Runs a part through the rewriter without output (the producer passes no padding and the header's
 * width as rowWidth): throws PartRefused, or answers whether the body (after the header line, for CSV)
 * would be rewritten, so a part already in stored form is kept as it is, without a copy.
 */
export function checkPartBody(part: Uint8Array, options: RewriterOptions): { modified: boolean } {
  const rewriter = new PartRewriter(NO_OUTPUT, options);
  for (let pos = 0; pos < part.length; ) pos = rewriter.feed(part, pos);
  rewriter.finish();
  return { modified: rewriter.modified };
}

/** The rewritten body of a part in memory, as blocks: its stored form after the header line (CSV). */
export function rewritePartBody(part: Uint8Array, options: RewriterOptions): Uint8Array[] {
  const out = new BlockWriter();
  const rewriter = new PartRewriter(out, options);
  const blocks: Uint8Array[] = [];
  for (let pos = 0; pos < part.length; ) {
    pos = rewriter.feed(part, pos);
    blocks.push(...out.drain());
  }
  rewriter.finish();
  out.flush();
  blocks.push(...out.drain());
  return blocks;
}

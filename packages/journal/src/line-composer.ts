import type { JournalFormat } from "@zarr-stream/spec";

const LF = 0x0a;
const CR = 0x0d;
const COMMA = 0x2c;
/** Output is handed on in blocks of this size: the only buffers whose size does not depend on the input. */
export const OUTPUT_BLOCK = 1 << 16;
/** A feed stops at the next line boundary once this many blocks wait, so output waiting is bounded. */
const MAX_READY = 4;

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Fills fixed-size blocks; full ones wait in `ready`. Blocks are never reused, so a sink may keep them. */
class BlockWriter {
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

/**
 * Rewrites one part's bytes into the composite, holding no line: CSV skips the part's header line, pads
 * each later line with `,` × pad and ends it with CRLF (invariants 3-5); NDJSON passes bytes through.
 * Either way a missing final terminator is added (invariant 2).
 */
export class PartRewriter {
  private skippingHeader: boolean;
  /** Bytes of the current line (CSV) or of the part (NDJSON) were written without a terminator. */
  private lineOpen = false;
  /** A CR ended the previous chunk: it is a terminator if an LF follows, content otherwise. */
  private pendingCr = false;
  private readonly ending: Buffer;

  constructor(
    private readonly out: BlockWriter,
    private readonly format: JournalFormat,
    pad: number,
  ) {
    this.skippingHeader = format === "csv";
    this.ending = Buffer.alloc(pad + 2, COMMA);
    this.ending[pad] = CR;
    this.ending[pad + 1] = LF;
  }

  /**
   * Consumes `chunk` from `from` and returns where it stopped: the chunk's end, or an earlier line
   * boundary when output blocks are waiting. The caller drains them and calls again from there.
   */
  feed(chunk: Uint8Array, from = 0): number {
    const bytes = asBuffer(chunk);
    if (this.format === "ndjson") return this.feedNdjson(bytes, from);
    let pos = from;
    if (this.skippingHeader) {
      const nl = bytes.indexOf(LF, pos);
      if (nl < 0) return bytes.length;
      this.skippingHeader = false;
      pos = nl + 1;
    }
    const out = this.out;
    const ending = this.ending;
    const unpadded = ending.length === 2;
    while (pos < bytes.length && out.ready.length < MAX_READY) {
      if (this.pendingCr) {
        this.pendingCr = false;
        if (bytes[pos] === LF) {
          out.write(ending, 0, ending.length);
          this.lineOpen = false;
          pos++;
          continue;
        }
        out.write(ending, ending.length - 2, ending.length - 1);
      }
      let nl = bytes.indexOf(LF, pos);
      if (nl < 0) {
        let end = bytes.length;
        if (bytes[end - 1] === CR) {
          this.pendingCr = true;
          end--;
        }
        out.write(bytes, pos, end);
        this.lineOpen = end > pos || this.lineOpen;
        return bytes.length;
      }
      if (unpadded && nl > pos && bytes[nl - 1] === CR) {
        // A run of CRLF lines needing no padding is already in composite form: copy it in one go.
        let runEnd = nl + 1;
        for (;;) {
          const next = bytes.indexOf(LF, runEnd);
          if (next < 0 || next === runEnd || bytes[next - 1] !== CR || next - pos > OUTPUT_BLOCK) break;
          runEnd = next + 1;
        }
        out.write(bytes, pos, runEnd);
        nl = runEnd - 1;
      } else {
        out.write(bytes, pos, nl > pos && bytes[nl - 1] === CR ? nl - 1 : nl);
        out.write(ending, 0, ending.length);
      }
      this.lineOpen = false;
      pos = nl + 1;
    }
    return Math.min(pos, bytes.length);
  }

  private feedNdjson(bytes: Buffer, from: number): number {
    const end = Math.min(bytes.length, from + OUTPUT_BLOCK * MAX_READY);
    if (end > from) {
      this.out.write(bytes, from, end);
      this.lineOpen = bytes[end - 1] !== LF;
    }
    return end;
  }

  finish(): void {
    if (this.format === "ndjson") {
      if (this.lineOpen) this.out.write(this.ending, this.ending.length - 1, this.ending.length);
    } else if (this.lineOpen || this.pendingCr) {
      // A CR at the very end of the part is taken as its final terminator.
      this.out.write(this.ending, 0, this.ending.length);
    }
    this.lineOpen = false;
    this.pendingCr = false;
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

  part(pad: number): PartRewriter {
    return new PartRewriter(this.out, this.format, pad);
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

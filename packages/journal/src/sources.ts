import { createReadStream } from "node:fs";
import { StoreError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { headerTooLong } from "./errors.js";

/**
 * A part to compose: its bytes, or a factory that streams them. Composing CSV reads each part twice
 * (its first line, then its body), so a factory must be callable more than once.
 */
export type PartSource = Uint8Array | (() => AsyncIterable<Uint8Array>);

const READ_CHUNK = 1 << 20;

/** Streams a local file in 1 MiB chunks. */
export function filePartSource(path: string): () => AsyncIterable<Uint8Array> {
  return () => createReadStream(path, { highWaterMark: READ_CHUNK });
}

/**
 * Streams a store object with ranged reads, checking each range is as long as the object's size says,
 * so a blob that shrinks or vanishes under the reader fails loudly instead of composing short. With
 * `lend` (for consumers that copy what they keep before asking for more: the composers, digests), every
 * chunk is read into one buffer the next read refills, where the store reads into a caller's buffer:
 * memory stays at one chunk and the allocator sees no stream of fresh megabyte buffers.
 */
export function storePartSource(
  store: Store,
  key: string,
  chunkSize = READ_CHUNK,
  options: { lend?: boolean } = {},
): () => AsyncIterable<Uint8Array> {
  return async function* read() {
    const size = await store.size(key);
    if (size === undefined)
      throw new StoreError(`journal part ${JSON.stringify(key)} is missing from ${store.url}`, key);
    const into =
      options.lend && store.getRangeInto ? Buffer.allocUnsafe(Math.min(chunkSize, size)) : undefined;
    for (let offset = 0; offset < size; offset += chunkSize) {
      const want = Math.min(chunkSize, size - offset);
      let bytes: Uint8Array | undefined;
      if (into === undefined) {
        bytes = await store.getRange(key, offset, want);
      } else {
        const n = await store.getRangeInto!(key, offset, want, into);
        bytes = n === undefined ? undefined : into.subarray(0, n);
      }
      if (bytes === undefined || bytes.length !== want) {
        throw new StoreError(
          `journal part ${JSON.stringify(key)} returned ${bytes?.length ?? "no"} bytes at offset ${offset}, expected ${want}`,
          key,
        );
      }
      yield bytes;
    }
  };
}

export async function* chunksOf(source: PartSource): AsyncIterable<Uint8Array> {
  if (source instanceof Uint8Array) yield source;
  else yield* source();
}

export interface FirstLine {
  /** The first line without its terminator (LF or CRLF). */
  line: Uint8Array;
  /** Whether any byte follows the first line's terminator. */
  hasBody: boolean;
}

/** A first line may carry a BOM (3 bytes) and a CR beyond the header cap; the cap itself is checked later. */
const FIRST_LINE_SLACK = 4;

/**
 * Reads a part only as far as its first line ends (plus one byte to know whether a body follows); the
 * line is the one buffer whose size depends on the input, a little over `maxHeaderBytes` at most
 * (PartRefused "header-too-long" beyond: headerCells makes the exact check).
 */
export async function readFirstLine(
  source: PartSource,
  maxHeaderBytes: number,
  where: string,
): Promise<FirstLine> {
  const pieces: Uint8Array[] = [];
  let length = 0;
  let line: Uint8Array | undefined;
  for await (const chunk of chunksOf(source)) {
    if (line !== undefined) {
      if (chunk.length > 0) return { line, hasBody: true };
      continue;
    }
    const nl = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).indexOf(0x0a);
    // A copy: a lending source refills the chunk once the next one is asked for.
    const take = Buffer.from(nl < 0 ? chunk : chunk.subarray(0, nl));
    pieces.push(take);
    length += take.length;
    if (length > maxHeaderBytes + FIRST_LINE_SLACK) throw headerTooLong(where, maxHeaderBytes);
    if (nl >= 0) {
      line = stripCr(Buffer.concat(pieces, length));
      if (nl + 1 < chunk.length) return { line, hasBody: true };
    }
  }
  return { line: line ?? stripCr(Buffer.concat(pieces, length)), hasBody: false };
}

function stripCr(line: Uint8Array): Uint8Array {
  return line.length > 0 && line[line.length - 1] === 0x0d ? line.subarray(0, line.length - 1) : line;
}

/** The first line of an in-memory part. */
export function firstLineOf(part: Uint8Array): FirstLine {
  const nl = Buffer.from(part.buffer, part.byteOffset, part.byteLength).indexOf(0x0a);
  if (nl < 0) return { line: stripCr(part), hasBody: false };
  return { line: stripCr(part.subarray(0, nl)), hasBody: nl + 1 < part.length };
}

import { createHash } from "node:crypto";
import { once } from "node:events";
import type { Writable } from "node:stream";
import { crc32 } from "node:zlib";
import { canPutStream, type Store } from "@zarr-stream/store";
import { chunksOf, type PartSource } from "./sources.js";

/**
 * Where composed bytes go: a Node writable stream (back-pressure honoured) or a callback, awaited before
 * the next chunk. Chunks are the sink's to keep unless ComposeOptions.reuseBuffers is set.
 */
export type ByteSink = NodeJS.WritableStream | ((chunk: Uint8Array) => void | Promise<void>);

/**
 * Hands `chunk` to the sink. A `lent` chunk is refilled once this resolves, so a stream is then waited on
 * until it has written the chunk out, not merely queued it.
 */
export async function writeToSink(out: ByteSink, chunk: Uint8Array, lent = false): Promise<void> {
  if (typeof out === "function") await out(chunk);
  else if (lent) {
    await new Promise<void>((resolve, reject) => {
      out.write(chunk, (error?: Error | null) => (error ? reject(error) : resolve()));
    });
  } else if (!out.write(chunk)) await once(out as Writable, "drain");
}

export function md5Hex(bytes: Uint8Array): string {
  return createHash("md5").update(bytes).digest("hex");
}

/** What identifies a blob's bytes in a row (size, md5) and in a zip entry (CRC-32). */
export interface BlobDigest {
  size: number;
  md5: string;
  crc: number;
}

/** Running digests over a stream of chunks, so nothing is held to compute them. */
export class Digester {
  private readonly hash = createHash("md5");
  private size = 0;
  private crc = 0;

  update(chunk: Uint8Array): void {
    this.hash.update(chunk);
    this.crc = crc32(chunk, this.crc);
    this.size += chunk.length;
  }

  digest(): BlobDigest {
    return { size: this.size, md5: this.hash.digest("hex"), crc: this.crc };
  }
}

/** The digests of a source, read as a stream (1 MiB store ranges, or a composer's 64 KiB blocks), lent or not. */
export async function digestOf(source: PartSource): Promise<BlobDigest> {
  const d = new Digester();
  for await (const chunk of chunksOf(source)) d.update(chunk);
  return d.digest();
}

/**
 * Writes `body` to `key` and answers the digests of what was written, or undefined when `ifAbsent` and
 * the key exists (nothing written). A streamed body goes through the store's putStream, so memory stays
 * bounded; a store without it gets the body gathered first (the README says which stores stream).
 */
export async function writeBlob(
  store: Store,
  key: string,
  body: PartSource,
  ifAbsent: boolean,
): Promise<BlobDigest | undefined> {
  if (body instanceof Uint8Array) {
    if (ifAbsent) {
      if (!(await store.putIfAbsent(key, body))) return undefined;
    } else {
      await store.put(key, body);
    }
    return digestOf(body);
  }
  const d = new Digester();
  async function* digested(): AsyncGenerator<Uint8Array> {
    for await (const chunk of chunksOf(body)) {
      d.update(chunk);
      yield chunk;
    }
  }
  if (canPutStream(store)) {
    return (await store.putStream(key, digested(), { ifAbsent })) ? d.digest() : undefined;
  }
  const blocks: Uint8Array[] = [];
  // Copies: a streamed body may lend its chunks.
  for await (const chunk of digested()) blocks.push(Buffer.from(chunk));
  return writeBlob(store, key, Buffer.concat(blocks), ifAbsent);
}

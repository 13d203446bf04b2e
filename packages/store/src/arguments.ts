import { StoreError } from "@zarr-stream/spec";
import {
  assertByteCount,
  assertBytes,
  assertExpectedVersion,
  assertValidKey,
  assertValidPrefix,
} from "./keys.js";

/*
 * The arguments of each store call, checked in one line at its top so that every backend refuses the
 * same bad input with the same StoreError before any I/O. Imported as a namespace: `check.range(...)`.
 */

export function key(key: string): void {
  assertValidKey(key);
}

export function range(key: string, offset: number, length: number): void {
  assertValidKey(key);
  assertByteCount("offset", offset, key);
  assertByteCount("length", length, key);
}

export function suffix(key: string, n: number): void {
  assertValidKey(key);
  assertByteCount("suffix length", n, key);
}

export function write(key: string, bytes: Uint8Array): void {
  assertValidKey(key);
  assertBytes(bytes, key);
}

export function stream(key: string, chunks: AsyncIterable<Uint8Array>): void {
  assertValidKey(key);
  if (typeof (chunks as Partial<AsyncIterable<Uint8Array>>)?.[Symbol.asyncIterator] !== "function") {
    throw new StoreError(`chunks for ${JSON.stringify(key)} must be an async iterable`, key);
  }
}

export function conditionalWrite(key: string, bytes: Uint8Array, expected: string | null): void {
  write(key, bytes);
  assertExpectedVersion(expected, key);
}

export function prefix(prefix: string): void {
  assertValidPrefix(prefix);
}

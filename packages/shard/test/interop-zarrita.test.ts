import assert from "node:assert/strict";
import { test } from "node:test";
import { crc32c } from "@zarr-stream/codecs";
import { MemoryStore, toZarritaStore } from "@zarr-stream/store";
import * as zarr from "zarrita";
import { shardIndexByteLength, shardKey } from "../src/index.js";
import { bytesOf } from "./helpers.js";
import { CASES, caseData, layoutOfCase, writeArray, writeGroup } from "./interop-cases.js";

let verified = 0;

/** zarrita's built-in crc32c strips the trailer unchecked; this one refuses a mismatch. */
class VerifyingCrc32c {
  readonly kind = "bytes_to_bytes";
  static fromConfig() {
    return new VerifyingCrc32c();
  }
  async encode(data: Uint8Array): Promise<Uint8Array> {
    const out = new Uint8Array(data.byteLength + 4);
    out.set(data);
    new DataView(out.buffer).setUint32(data.byteLength, await crc32c(data), true);
    return out;
  }
  async decode(data: Uint8Array): Promise<Uint8Array> {
    if (data.byteLength < 4) throw new Error(`crc32c: ${data.byteLength} bytes cannot hold a checksum`);
    const body = data.subarray(0, data.byteLength - 4);
    const stored = new DataView(data.buffer, data.byteOffset + body.byteLength, 4).getUint32(0, true);
    const actual = await crc32c(body);
    if (stored !== actual) throw new Error(`crc32c mismatch: stored ${stored}, computed ${actual}`);
    verified++;
    return body;
  }
  computeEncodedSize(n: number): number {
    return n + 4;
  }
}

test("§1 zarrita 0.7.5 opens arrays zarr-stream wrote and reads equal values, verifying the index CRC", async () => {
  const original = zarr.registry.get("crc32c");
  zarr.registry.set("crc32c", async () => VerifyingCrc32c as never);
  try {
    const store = new MemoryStore();
    await writeGroup(store, { title: "zarrita" });
    const root = zarr.root(toZarritaStore(store));
    for (const [i, c] of CASES.entries()) {
      const data = caseData(c, 3000 + i);
      await writeArray(store, c.name, layoutOfCase(c), data);
      const arr = await zarr.open.v3(root.resolve(c.name), { kind: "array" });
      assert.deepEqual(arr.shape, c.shape);
      assert.equal(arr.dtype, c.dtype);
      const got = await zarr.get(arr, null);
      assert.ok(
        Buffer.from(bytesOf(got.data as never)).equals(Buffer.from(bytesOf(data))),
        `zarrita read ${c.name}`,
      );
    }
    assert.ok(verified > 0, "the verifying crc32c codec ran");

    // The check is live: a shard whose index CRC is damaged is refused instead of read.
    const c = CASES[0]!;
    const key = shardKey(c.name, [1, 1, 1]);
    const bytes = (await store.get(key))!;
    bytes[bytes.byteLength - 1]! ^= 0x01;
    await store.put(key, bytes);
    const arr = await zarr.open.v3(root.resolve(c.name), { kind: "array" });
    await assert.rejects(zarr.get(arr, null), (e: Error) =>
      /crc32c mismatch/.test(String((e.cause as Error)?.message)),
    );
    assert.equal(shardIndexByteLength(layoutOfCase(c)), 16 * 2 * 2 * 2 + 4);
  } finally {
    if (original) zarr.registry.set("crc32c", original);
  }
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { shardKey } from "@zarr-stream/shard";
import { MemoryStore, type ReadableStore } from "@zarr-stream/store";
import { openArray, readArrayRegion } from "../src/index.js";
import { putGridArray } from "./helpers.js";

const value = (t: number, y: number, x: number) => 1000 * t + 10 * y + x + 1;
/** u[time 8, y 6, x 8] in 16 shards: twice as many as a read runs at once (8). */
const SHAPE: [number, number, number] = [8, 6, 8];
const WHOLE = SHAPE.map((n) => [0, n] as [number, number]);

/**
 * A store whose reads of `failing` reject at once and whose other reads answer after `delayMs`; it logs
 * when each read starts, so a test can tell which reads began after the caller saw the error.
 */
function slowStoreFailing(inner: ReadableStore, failing: (key: string) => boolean, delayMs: number) {
  const started: string[] = [];
  const wrap =
    <A extends unknown[], R>(fn: (key: string, ...a: A) => Promise<R>) =>
    async (key: string, ...a: A): Promise<R> => {
      started.push(key);
      if (failing(key)) throw new Error(`injected read failure at ${key}`);
      await sleep(delayMs);
      return fn(key, ...a);
    };
  const store: ReadableStore = {
    url: inner.url,
    readCost: "per-request",
    get: wrap((k) => inner.get(k)),
    getRange: wrap((k, o: number, n: number) => inner.getRange(k, o, n)),
    getSuffix: wrap((k, n: number) => inner.getSuffix(k, n)),
    size: wrap((k) => inner.size(k)),
  };
  return { store, started };
}

/** Reads WHOLE into a NaN-filled out through `read`, expecting it to fail; returns out and what it held then. */
async function failingRead(read: (out: Float64Array) => Promise<unknown>) {
  const out = new Float64Array(8 * 6 * 8).fill(Number.NaN);
  await assert.rejects(read(out), /injected read failure/);
  const atRejection = Float64Array.from(out);
  await sleep(150); // long past every delayed read
  return { out, atRejection };
}

describe("a failed read settles before it rejects", () => {
  it("our layout: no shard read writes into out after the rejection, and no lane takes a new shard", async () => {
    const inner = new MemoryStore();
    const layout = await putGridArray(inner, "u", SHAPE, value);
    const failingKey = shardKey("u", [0, 0, 0]);
    const { store, started } = slowStoreFailing(inner, (k) => k === failingKey, 40);
    let startedAtRejection = 0;
    const { out, atRejection } = await failingRead(async (o) => {
      try {
        return await readArrayRegion(store, "u", layout, WHOLE, { out: o });
      } finally {
        startedAtRejection = started.length;
      }
    });
    assert.deepEqual(Array.from(out), Array.from(atRejection), "out changed after the read rejected");
    assert.ok(
      atRejection.some((v) => !Number.isNaN(v)),
      "the other shards' reads finished before the rejection",
    );
    assert.equal(started.length, startedAtRejection, "a read started after the rejection");
    assert.equal(new Set(started).size, 8, "only the first shard of each of the 8 lanes is read");
  });

  it("the general sharded path: no inner chunk lands in out after the rejection", async () => {
    const inner = new MemoryStore();
    await putGridArray(inner, "u", SHAPE, value);
    const array = { ...(await openArray(inner, "u")), layout: undefined }; // read chunk by chunk
    // The index reads (suffixes) succeed; the first inner chunk body read fails, the others are slow.
    let bodyReads = 0;
    const { store } = slowStoreFailing(inner, () => false, 0);
    const slow: ReadableStore = {
      ...store,
      getRange: async (k, o, n) => {
        if (bodyReads++ === 0) throw new Error(`injected read failure at ${k}`);
        await sleep(40);
        return inner.getRange(k, o, n);
      },
    };
    const { out, atRejection } = await failingRead((o) =>
      readArrayRegion(slow, "u", array, WHOLE, { out: o }),
    );
    assert.deepEqual(Array.from(out), Array.from(atRejection), "out changed after the read rejected");
  });
});

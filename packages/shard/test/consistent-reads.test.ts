import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { TornRead } from "@zarr-stream/spec";
import { FsStore, MemoryStore, S3Store, type Store } from "@zarr-stream/store";
import { interleaved } from "@zarr-stream/test-support/interleave";
import {
  S3_SERVER_KINDS,
  type S3Server,
  s3ServerSkipReason,
  startS3Server,
} from "@zarr-stream/test-support/s3-server";
import { tempDir } from "@zarr-stream/test-support/temp-dirs";
import {
  type ArrayLayout,
  encodeShard,
  type ReadTarget,
  readShardInto,
  readShardRegion,
  SHARD_READ_ATTEMPTS,
  shardKey,
} from "../src/index.js";
import { layoutOf, randomBytes } from "./helpers.js";

/**
 * One time shard of 4 records of 128 x 128 float64 in chunks of a quarter record, Blosc-zstd. Version A
 * holds random values (stored uncompressed); version B other random values, except its record 0, which is
 * smooth and compresses small, so B's bodies lie at other offsets than A's: B's bytes at A's offsets decode
 * as neither. Both are several times the 64 KiB first window, so record 1's bodies are read apart from the
 * index.
 */
const layout: ArrayLayout = layoutOf({
  shape: [4, 128, 128],
  shardShape: [4, 128, 128],
  chunkShape: [1, 64, 64],
  dtype: "float64",
  codec: profileCodec("diagnostic", "float64"),
});
const KEY = shardKey("v", [0, 0, 0]);
const RECORD = 128 * 128;
const randomValues = (seed: number) =>
  new Float64Array(randomBytes(4 * RECORD * 8, seed).buffer).map((v) => (Number.isFinite(v) ? v : 0));
const A = randomValues(7);
const B = randomValues(8).map((v, i) => (i < RECORD ? 1000 + (i % 97) : v));
const SEL: [number, number][] = [
  [1, 2],
  [0, 128],
  [0, 128],
];
const recordOf = (data: Float64Array) => data.slice(RECORD, 2 * RECORD);
let shardA: Uint8Array;
let shardB: Uint8Array;

before(async () => {
  shardA = await encodeShard(layout, [0, 0, 0], A);
  shardB = await encodeShard(layout, [0, 0, 0], B);
  assert.notEqual(shardA.length, shardB.length, "the versions' bodies must lie at different offsets");
});

/** Record 1 read through readShardRegion (plain reads) and readShardInto with scratch (reads into buffers). */
const reads = {
  region: (store: Store) => readShardRegion(store, KEY, layout, [0, 0, 0], SEL),
  into: async (store: Store) => {
    const data = new Float64Array(RECORD);
    const target: ReadTarget = { data, shape: [1, 128, 128], start: [0, 0, 0], zeroed: false };
    const buffer = () => {
      let b = new Uint8Array(0);
      return {
        take: (n: number) => {
          if (b.length < n) b = new Uint8Array(n);
          return b;
        },
      };
    };
    const found = await readShardInto(store, KEY, layout, [0, 0, 0], SEL, target, {
      window: buffer(),
      bodies: buffer(),
    });
    return found ? data : undefined;
  },
};

/**
 * The interleaving cases on one store: the shard is A; the writer replaces it between the reader's
 * index read and its body reads. `pinsFile` stores (FsStore) keep reading A through the file they
 * opened; the others see the change and read B whole from its index on.
 */
function interleavingSuite(name: string, make: () => Promise<Store> | Store, pinsFile: boolean): void {
  for (const [how, read] of Object.entries(reads)) {
    test(`${name} (${how}): a shard replaced between the index read and the body reads is read from one version`, async () => {
      const inner = await make();
      await inner.put(KEY, shardA);
      const { store, ran } = interleaved(inner, KEY, () => inner.put(KEY, shardB), { readCost: "cheap" });
      const got = await read(store);
      assert.equal(ran(), 1, "the replacement ran between the index read and the body reads");
      assert.deepEqual(got, recordOf(pinsFile ? A : B));
    });

    test(`${name} (${how}): a shard replaced under every attempt gives TornRead after ${SHARD_READ_ATTEMPTS}, never mixed values`, async () => {
      const inner = await make();
      await inner.put(KEY, shardA);
      let next = 0;
      const replace = () => inner.put(KEY, next++ % 2 === 0 ? shardB : shardA);
      const { store, ran } = interleaved(inner, KEY, replace, { readCost: "cheap", times: Infinity });
      if (pinsFile) {
        assert.deepEqual(await read(store), recordOf(A));
        assert.equal(ran(), 1);
        return;
      }
      await assert.rejects(read(store), (err: unknown) => {
        assert.ok(err instanceof TornRead, String(err));
        assert.equal(err.key, KEY);
        assert.equal(err.attempts, SHARD_READ_ATTEMPTS);
        assert.match(err.message, new RegExp(`${KEY}.*${SHARD_READ_ATTEMPTS} reads`));
        return true;
      });
      assert.equal(ran(), SHARD_READ_ATTEMPTS);
    });
  }

  test(`${name}: a shard deleted between the index read and the body reads reads as absent`, async () => {
    const inner = await make();
    await inner.put(KEY, shardA);
    const { store } = interleaved(inner, KEY, () => inner.delete(KEY), { readCost: "cheap" });
    const got = await reads.region(store);
    assert.deepEqual(got, pinsFile ? recordOf(A) : undefined);
  });
}

interleavingSuite("MemoryStore", () => new MemoryStore(), false);
interleavingSuite("FsStore", () => new FsStore(tempDir("consistent-reads")), true);
interleavingSuite(
  "FsStore on node:fs",
  () => withEnv("ZSTREAM_NATIVE_FS", "0", () => new FsStore(tempDir("consistent-reads"))),
  true,
);

for (const kind of S3_SERVER_KINDS) {
  describe(`S3Store on ${kind}`, { skip: s3ServerSkipReason(kind) }, () => {
    let server: S3Server<S3Store>;
    before(async () => {
      server = await startS3Server(kind, (o) => new S3Store(o));
      await server.makeBucket();
    });
    after(() => server?.stop());
    interleavingSuite(`S3Store on ${kind}`, () => server.store(), false);
  });
}

test("a store without pins is not snapshot-consistent: the same interleaving decodes the new bytes at the old offsets", async () => {
  const inner = new MemoryStore();
  await inner.put(KEY, shardA);
  // The store as a structural reader without the pin capability: what every store was before pins.
  const plain: Store = Object.assign(Object.create(null), {
    url: inner.url,
    readCost: "cheap",
    get: (k: string) => inner.get(k),
    getRange: (k: string, o: number, n: number) => inner.getRange(k, o, n),
    getSuffix: (k: string, n: number) => inner.getSuffix(k, n),
    size: (k: string) => inner.size(k),
    put: (k: string, b: Uint8Array) => inner.put(k, b),
    putIfAbsent: (k: string, b: Uint8Array) => inner.putIfAbsent(k, b),
    delete: (k: string) => inner.delete(k),
    list: (p: string) => inner.list(p),
  });
  const { store } = interleaved(plain, KEY, () => inner.put(KEY, shardB));
  const got = await reads.region(store).catch((err: unknown) => err);
  // Either the decoder refuses the foreign bytes or it yields values of neither version.
  if (got instanceof Float64Array) {
    assert.notDeepEqual(got, recordOf(A));
    assert.notDeepEqual(got, recordOf(B));
  } else assert.ok(got instanceof Error, String(got));
});

function withEnv<T>(name: string, value: string, make: () => T): T {
  const saved = process.env[name];
  process.env[name] = value;
  try {
    return make();
  } finally {
    if (saved === undefined) delete process.env[name];
    else process.env[name] = saved;
  }
}

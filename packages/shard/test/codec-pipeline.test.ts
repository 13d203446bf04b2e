import assert from "node:assert/strict";
import { test } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { itemSize, SchemaError, UnsupportedCodec } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import fc from "fast-check";
import { typedFromBytes } from "../src/dtype.js";
import {
  type ArrayLayout,
  arrayZarrJson,
  buildPipeline,
  type ChunkSpec,
  chunkKey,
  openZarrArray,
  readChunkInto,
  registerCodec,
} from "../src/index.js";
import { ALL_DTYPES, bytesOf, product, randomBytes } from "./helpers.js";

type Meta = { name: string; configuration?: Record<string, unknown> };

const bytesToBytes: fc.Arbitrary<Meta> = fc.oneof(
  fc.record({
    name: fc.constant("gzip"),
    configuration: fc.record({ level: fc.integer({ min: 0, max: 9 }) }),
  }),
  fc.record({
    name: fc.constant("zstd"),
    configuration: fc.record({ level: fc.integer({ min: -5, max: 9 }), checksum: fc.boolean() }),
  }),
  fc.record({
    name: fc.constant("blosc"),
    configuration: fc.record({
      cname: fc.constant("zstd"),
      clevel: fc.integer({ min: 0, max: 9 }),
      shuffle: fc.constantFrom("noshuffle", "shuffle", "bitshuffle"),
    }),
  }),
  fc.constant({ name: "crc32c" }),
);

/** [transpose?] bytes [bytes→bytes...], zstd only where the length reaching it is fixed. */
function chain(rank: number, maxAfter: number): fc.Arbitrary<Meta[]> {
  return fc
    .record({
      order: fc.option(fc.shuffledSubarray([...Array(rank).keys()], { minLength: rank, maxLength: rank })),
      endian: fc.constantFrom("little", "big"),
      after: fc.array(bytesToBytes, { maxLength: maxAfter }),
    })
    .map(({ order, endian, after }) => {
      const fixedUntil = after.findIndex((c) => c.name !== "crc32c");
      const kept = after.filter((c, i) => c.name !== "zstd" || fixedUntil < 0 || i <= fixedUntil);
      return [
        ...(order === null ? [] : [{ name: "transpose", configuration: { order } }]),
        { name: "bytes", configuration: { endian } },
        ...kept,
      ];
    });
}

/** A chunk shape, a codec chain for it, possibly sharding_indexed around an inner chain, and its data. */
const pipelineCase = fc
  .record({ rank: fc.integer({ min: 1, max: 3 }), dtype: fc.constantFrom(...ALL_DTYPES), seed: fc.nat() })
  .chain(({ rank, dtype, seed }) =>
    fc.record({
      dtype: fc.constant(dtype),
      seed: fc.constant(seed),
      inner: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: rank, maxLength: rank }),
      grid: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: rank, maxLength: rank }),
      sharded: fc.boolean(),
      codecs: chain(rank, 3),
      indexLocation: fc.constantFrom("start", "end"),
      outer: chain(rank, 2),
      zeroChunks: fc.nat(),
    }),
  );

test("a codec chain decodes what it encodes, bitwise, for every dtype and combination (sharded or not)", async () => {
  await fc.assert(
    fc.asyncProperty(pipelineCase, async (c) => {
      const shape = c.sharded ? c.inner.map((n, d) => n * c.grid[d]!) : c.inner;
      const codecs = c.sharded
        ? [
            ...c.outer.filter((m) => m.name === "transpose"),
            {
              name: "sharding_indexed",
              configuration: { chunk_shape: c.inner, codecs: c.codecs, index_location: c.indexLocation },
            },
            // A shard's length varies, so zstd (which needs it) cannot follow sharding.
            ...c.outer.filter((m) => !["transpose", "bytes", "zstd"].includes(m.name)),
          ]
        : c.codecs;
      // A transpose before sharding permutes the shard, so the inner chunk shape must follow it.
      const order =
        codecs[0]?.name === "transpose" ? (codecs[0].configuration!.order as number[]) : undefined;
      const decodedShape = order === undefined ? shape : shape.map((_, d) => shape[order.indexOf(d)]!);
      const spec: ChunkSpec = {
        shape: decodedShape,
        dtype: c.dtype,
        fill: c.dtype.endsWith("64") && c.dtype.includes("int") ? 0n : 0,
      };
      const pipeline = buildPipeline(codecs, spec, "/codecs", "case");
      const raw = randomBytes(product(decodedShape) * itemSize(c.dtype), c.seed);
      // Zero some stretches so sharding leaves inner chunks out (all fill).
      if (c.zeroChunks % 2 === 1) raw.fill(0, 0, Math.floor(raw.length / 2));
      const data = typedFromBytes(c.dtype, raw);
      const encoded = await pipeline.encode(data);
      const fixed = pipeline.encodedLength();
      if (fixed !== undefined) assert.equal(encoded.byteLength, fixed, "fixed encoded length");
      const back = await pipeline.decode(encoded, "k");
      assert.equal(back.constructor, data.constructor);
      assert.ok(Buffer.from(bytesOf(back)).equals(Buffer.from(raw)), JSON.stringify(codecs));
    }),
    { numRuns: 120 },
  );
});

test("a partial read of a general sharded chunk equals the same box of the whole decode, and reads only the inner chunks it needs", async () => {
  const shape = [4, 6];
  const doc = {
    zarr_format: 3,
    node_type: "array",
    shape,
    data_type: "int32",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [4, 6] } },
    chunk_key_encoding: { name: "default" },
    fill_value: -7,
    codecs: [
      {
        name: "sharding_indexed",
        configuration: {
          chunk_shape: [2, 3],
          codecs: [
            { name: "transpose", configuration: { order: [1, 0] } },
            { name: "bytes", configuration: { endian: "big" } },
            { name: "gzip" },
          ],
          index_codecs: [{ name: "bytes", configuration: { endian: "little" } }, { name: "crc32c" }],
        },
      },
    ],
  };
  const array = openZarrArray(doc, "a/zarr.json");
  assert.equal(array.layout, undefined);
  const values = Int32Array.from({ length: 24 }, (_, i) => (i < 12 ? -7 : i * 3 - 20));
  const store = new MemoryStore();
  await store.put(chunkKey("a", array, [0, 0]), await array.pipeline.encode(values));
  const ranges: [number, number][] = [];
  // Shard reads go through a pin of the object (one version for the index and the bodies).
  const pin = store.pin.bind(store);
  store.pin = (key) => {
    const pinned = pin(key);
    return {
      ...pinned,
      getRange: (offset, length) => {
        ranges.push([offset, length]);
        return pinned.getRange(offset, length);
      },
    };
  };
  const out = new Int32Array(3 * 2);
  const target = { data: out, shape: [3, 2], start: [0, 0], zeroed: false };
  assert.equal(
    await readChunkInto(
      store,
      "a/c/0/0",
      array,
      [0, 0],
      [
        [1, 4],
        [2, 4],
      ],
      target,
    ),
    true,
  );
  const expected = [1, 2, 3].flatMap((r) => [2, 3].map((c) => values[r * 6 + c]!));
  assert.deepEqual(Array.from(out), expected);
  // The first row of inner chunks is all fill, so left out: of the four the box touches, two are read.
  assert.equal(ranges.length, 2);
  assert.equal(
    await readChunkInto(
      store,
      "a/c/9/9",
      array,
      [0, 0],
      [
        [0, 1],
        [0, 1],
      ],
      target,
    ),
    false,
  );
});

test("openZarrArray recognises our own pipeline and gives it the fast path's layout", () => {
  const layout: ArrayLayout = {
    shape: [5, 4],
    shardShape: [4, 4],
    chunkShape: [2, 2],
    dtype: "float32",
    codec: profileCodec("diagnostic", "float32"),
    dimensionNames: ["t", "x"],
    attributes: { units: "K" },
  };
  const array = openZarrArray(arrayZarrJson(layout), "v/zarr.json");
  assert.deepEqual(array.layout, layout);
  assert.deepEqual(array.chunkShape, [4, 4]);
  assert.equal(array.pipeline.arrayToBytes.name, "sharding_indexed");
  const gzipInside = arrayZarrJson(layout);
  (gzipInside.codecs[0]!.configuration!.codecs as Meta[])[1] = { name: "gzip" };
  assert.equal(openZarrArray(gzipInside).layout, undefined, "gzip inside: general path");
});

test("codec lists and configurations are checked at open, naming the JSON pointer", () => {
  const base = {
    zarr_format: 3,
    node_type: "array",
    shape: [4],
    data_type: "float64",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [2] } },
    chunk_key_encoding: { name: "default" },
    fill_value: "NaN",
  };
  const open = (codecs: unknown[]) => () => openZarrArray({ ...base, codecs }, "v/zarr.json");
  const schemaCases: [string, unknown[]][] = [
    ["/codecs/0", [{ name: "gzip" }]],
    ["/codecs/1", [{ name: "bytes" }, { name: "transpose", configuration: { order: [0] } }]],
    ["/codecs/1", [{ name: "bytes" }, { name: "bytes" }]],
    ["/codecs/0/configuration/endian", [{ name: "bytes", configuration: { endian: "middle" } }]],
    [
      "/codecs/0/configuration/order",
      [{ name: "transpose", configuration: { order: [1] } }, { name: "bytes" }],
    ],
    ["/codecs/1/configuration/level", [{ name: "bytes" }, { name: "gzip", configuration: { level: 12 } }]],
    ["/codecs/1/configuration/lvl", [{ name: "bytes" }, { name: "zstd", configuration: { lvl: 1 } }]],
    [
      "/codecs/1/configuration/shuffle",
      [{ name: "bytes" }, { name: "blosc", configuration: { cname: "zstd", clevel: 1, shuffle: 3 } }],
    ],
    [
      "/codecs/0/configuration/chunk_shape/0",
      [{ name: "sharding_indexed", configuration: { chunk_shape: [3], codecs: [{ name: "bytes" }] } }],
    ],
    [
      "/codecs/0/configuration/index_codecs",
      [
        {
          name: "sharding_indexed",
          configuration: {
            chunk_shape: [1],
            codecs: [{ name: "bytes" }],
            index_codecs: [{ name: "bytes" }, { name: "gzip" }],
          },
        },
      ],
    ],
  ];
  for (const [pointer, codecs] of schemaCases) {
    assert.throws(
      open(codecs),
      (e) => e instanceof SchemaError && e.pointer === pointer && e.document === "v/zarr.json",
      pointer,
    );
  }
  assert.throws(
    open([{ name: "bytes" }, { name: "gzip" }, { name: "zstd" }]),
    (e) => e instanceof UnsupportedCodec && e.codec === "zstd" && e.pointer === "/codecs/2",
    "zstd after a varying length",
  );
  assert.throws(() => openZarrArray({ ...base, fill_value: "nope", codecs: [{ name: "bytes" }] }), {
    name: "SchemaError",
    pointer: "/fill_value",
  });
  assert.equal(Number.isNaN(openZarrArray({ ...base, codecs: [{ name: "bytes" }] }).fill), true);
});

test("registerCodec makes an array with that codec open", () => {
  const doc = {
    zarr_format: 3,
    node_type: "array",
    shape: [3],
    data_type: "uint8",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [3] } },
    chunk_key_encoding: { name: "v2" },
    fill_value: 0,
    codecs: [{ name: "bytes" }, { name: "test.reverse" }],
  };
  assert.throws(() => openZarrArray(doc), { name: "UnsupportedCodec", codec: "test.reverse" });
  registerCodec("test.reverse", () => ({
    kind: "bytes_to_bytes",
    name: "test.reverse",
    needsDecodedLength: false,
    encodedLength: (n) => n,
    encode: async (b) => b.slice().reverse(),
    decode: async (b) => b.slice().reverse(),
  }));
  const array = openZarrArray(doc);
  assert.equal(array.pipeline.bytesToBytes[0]!.name, "test.reverse");
  assert.equal(chunkKey("a", array, [2]), "a/2");
});

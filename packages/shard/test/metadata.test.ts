import assert from "node:assert/strict";
import { test } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { SchemaError } from "@zarr-stream/spec";
import {
  type ArrayLayout,
  allocTyped,
  arrayZarrJson,
  encodeZarrJson,
  groupZarrJson,
  itemSize,
  parseArrayZarrJson,
  shardGrid,
  shardKey,
} from "../src/index.js";

const layout: ArrayLayout = {
  shape: [4, 3, 5],
  shardShape: [2, 3, 4],
  chunkShape: [1, 3, 2],
  dtype: "float32",
  codec: profileCodec("diagnostic", "float32"),
  dimensionNames: ["time", "lat", "lon"],
  attributes: { units: "K", long_name: "temperature" },
};

test("§1 arrayZarrJson: chunk_grid is the shard shape, sharding_indexed holds the inner chunk and the v1 codec chain", () => {
  assert.deepEqual(arrayZarrJson(layout), {
    zarr_format: 3,
    node_type: "array",
    shape: [4, 3, 5],
    data_type: "float32",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [2, 3, 4] } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: 0,
    codecs: [
      {
        name: "sharding_indexed",
        configuration: {
          chunk_shape: [1, 3, 2],
          codecs: [
            { name: "bytes", configuration: { endian: "little" } },
            {
              name: "blosc",
              configuration: { cname: "zstd", clevel: 5, shuffle: "shuffle", typesize: 4, blocksize: 0 },
            },
          ],
          index_codecs: [{ name: "bytes", configuration: { endian: "little" } }, { name: "crc32c" }],
          index_location: "end",
        },
      },
    ],
    attributes: { units: "K", long_name: "temperature", _ARRAY_DIMENSIONS: ["time", "lat", "lon"] },
    dimension_names: ["time", "lat", "lon"],
  });
  const wasm = arrayZarrJson({ ...layout, codec: profileCodec("wasm", "float32") });
  const inner = (wasm.codecs[0]!.configuration!.codecs as unknown[])[1];
  assert.deepEqual(inner, { name: "zstd", configuration: { level: 5, checksum: false } });
});

test("§1 encodeZarrJson: 2-space JSON, no trailing newline, float fill spelled 0.0 (ints stay 0)", () => {
  const text = new TextDecoder().decode(encodeZarrJson(arrayZarrJson(layout)));
  assert.ok(text.includes('\n  "fill_value": 0.0,\n'));
  assert.ok(!text.endsWith("\n"));
  assert.deepEqual(JSON.parse(text), arrayZarrJson(layout));
  const ints = new TextDecoder().decode(encodeZarrJson(arrayZarrJson({ ...layout, dtype: "int32" })));
  assert.ok(ints.includes('\n  "fill_value": 0,\n'));
  const nested = new TextDecoder().decode(
    encodeZarrJson(arrayZarrJson({ ...layout, attributes: { fill_value: 0 } })),
  );
  assert.ok(nested.includes('\n  "fill_value": 0.0,\n'));
  assert.ok(nested.includes('\n    "fill_value": 0,\n'), "a nested attribute named fill_value is untouched");
  assert.equal(
    new TextDecoder().decode(encodeZarrJson(groupZarrJson({ title: "t" }))),
    JSON.stringify(groupZarrJson({ title: "t" }), null, 2),
  );
  assert.deepEqual(groupZarrJson({ a: 1 }), { zarr_format: 3, node_type: "group", attributes: { a: 1 } });
});

test("§1 parseArrayZarrJson inverts arrayZarrJson for every profile", () => {
  for (const profile of ["diagnostic", "checkpoint", "wasm"] as const) {
    const l = { ...layout, codec: profileCodec(profile, "float32") };
    assert.deepEqual(parseArrayZarrJson(arrayZarrJson(l)), l);
    assert.deepEqual(
      parseArrayZarrJson(JSON.parse(new TextDecoder().decode(encodeZarrJson(arrayZarrJson(l))))),
      l,
    );
  }
});

/** What zarr-python 3.1 writes for a sharded array (storage_transformers, no _ARRAY_DIMENSIONS, noshuffle). */
function zarrPythonDoc(): Record<string, unknown> {
  return {
    shape: [10, 6],
    data_type: "int64",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [4, 6] } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: 0,
    codecs: [
      {
        name: "sharding_indexed",
        configuration: {
          chunk_shape: [2, 3],
          codecs: [
            { name: "bytes", configuration: { endian: "little" } },
            {
              name: "blosc",
              configuration: { typesize: 8, cname: "zstd", clevel: 3, shuffle: "noshuffle", blocksize: 0 },
            },
          ],
          index_codecs: [{ name: "bytes", configuration: { endian: "little" } }, { name: "crc32c" }],
          index_location: "end",
        },
      },
    ],
    attributes: {},
    dimension_names: ["x", "y"],
    zarr_format: 3,
    node_type: "array",
    storage_transformers: [],
  };
}

test("§1 parseArrayZarrJson accepts zarr-python and TensorStore spellings", () => {
  const l = parseArrayZarrJson(zarrPythonDoc());
  assert.deepEqual(l.codec, {
    kind: "blosc",
    cname: "zstd",
    clevel: 3,
    shuffle: 0,
    typesize: 8,
    blocksize: 0,
  });
  assert.deepEqual(l.attributes, {});
  assert.deepEqual(l.dimensionNames, ["x", "y"]);

  // TensorStore: no chunk_key_encoding configuration, blosc without typesize, bitshuffle, no dimension_names
  // but _ARRAY_DIMENSIONS, index_location start.
  const ts = zarrPythonDoc();
  delete ts.storage_transformers;
  delete ts.dimension_names;
  ts.attributes = { _ARRAY_DIMENSIONS: ["a", "b"], note: "x" };
  ts.chunk_key_encoding = { name: "default" };
  const sharding = (ts.codecs as { configuration: Record<string, unknown> }[])[0]!.configuration;
  sharding.codecs = [
    { name: "bytes" },
    { name: "blosc", configuration: { cname: "zstd", clevel: 1, shuffle: "bitshuffle" } },
  ];
  sharding.index_location = "start";
  const t = parseArrayZarrJson(ts);
  assert.deepEqual(t.codec, {
    kind: "blosc",
    cname: "zstd",
    clevel: 1,
    shuffle: 2,
    typesize: itemSize("int64"),
    blocksize: 0,
  });
  assert.deepEqual(t.dimensionNames, ["a", "b"]);
  assert.deepEqual(t.attributes, { note: "x" });
  assert.equal(t.indexLocation, "start");

  sharding.codecs = [{ name: "bytes" }, { name: "zstd", configuration: { level: 0 } }];
  assert.deepEqual(parseArrayZarrJson(ts).codec, { kind: "zstd", level: 0, checksum: false });
});

test("§1 parseArrayZarrJson refuses what it cannot decode bitwise, naming the JSON pointer", () => {
  // [pointer expected, where the change goes, field, new value, what it shows]
  const cases: [string, "doc" | "sharding", string, unknown, string][] = [
    ["/zarr_format", "doc", "zarr_format", 2, "zarr_format"],
    ["/node_type", "doc", "node_type", "group", "node_type"],
    ["/shape/1", "doc", "shape", [10, -1], "shape"],
    ["/data_type", "doc", "data_type", "complex64", "data_type"],
    ["/fill_value", "doc", "fill_value", "NaN", "NaN fill"],
    ["/fill_value", "doc", "fill_value", 1, "nonzero fill"],
    ["/storage_transformers", "doc", "storage_transformers", [{ name: "x" }], "transformers"],
    [
      "/chunk_key_encoding/configuration/separator",
      "doc",
      "chunk_key_encoding",
      { name: "default", configuration: { separator: "." } },
      "separator",
    ],
    [
      "/chunk_grid/configuration/chunk_shape",
      "doc",
      "chunk_grid",
      { name: "regular", configuration: { chunk_shape: [4] } },
      "rank",
    ],
    ["/codecs", "doc", "codecs", [{ name: "bytes" }, { name: "zstd" }], "not sharded"],
    ["/codecs/0/configuration/chunk_shape/0", "sharding", "chunk_shape", [3, 3], "inner does not divide"],
    [
      "/codecs/0/configuration/codecs/1/configuration/cname",
      "sharding",
      "codecs",
      [{ name: "bytes" }, { name: "blosc", configuration: { cname: "lz4", clevel: 5, shuffle: "shuffle" } }],
      "lz4",
    ],
    [
      "/codecs/0/configuration/codecs/1/name",
      "sharding",
      "codecs",
      [{ name: "bytes" }, { name: "gzip" }],
      "gzip",
    ],
    [
      "/codecs/0/configuration/codecs/0/configuration/endian",
      "sharding",
      "codecs",
      [{ name: "bytes", configuration: { endian: "big" } }, { name: "zstd" }],
      "big endian",
    ],
    ["/codecs/0/configuration/index_codecs", "sharding", "index_codecs", [{ name: "bytes" }], "no crc"],
    ["/codecs/0/configuration/index_location", "sharding", "index_location", "middle", "index_location"],
    [
      "/chunk_grid/configuration/chunk_shape/0",
      "doc",
      "chunk_grid",
      { name: "regular", configuration: { chunk_shape: [2 ** 32, 6] } },
      "shard dim past int32",
    ],
    ["/dimension_names", "doc", "dimension_names", ["x"], "names rank"],
    ["/dimension_names/1", "doc", "dimension_names", ["x", null], "null name"],
    [
      "/attributes/_ARRAY_DIMENSIONS",
      "doc",
      "attributes",
      { _ARRAY_DIMENSIONS: ["y", "x"] },
      "conflicting names",
    ],
  ];
  for (const [pointer, where, field, value, what] of cases) {
    const doc = zarrPythonDoc();
    const sharding = (doc.codecs as { configuration: Record<string, unknown> }[])[0]!.configuration;
    (where === "doc" ? doc : sharding)[field] = value;
    assert.throws(
      () => parseArrayZarrJson(doc, "v/zarr.json"),
      (e) =>
        e instanceof SchemaError &&
        e.pointer === pointer &&
        e.document === "v/zarr.json" &&
        e.message.startsWith("v/zarr.json: "),
      what,
    );
  }
  // An inner chunk the codecs cannot hold whole: 2^28 x 3 int64 values is 6 GiB.
  const huge = zarrPythonDoc();
  huge.chunk_grid = { name: "regular", configuration: { chunk_shape: [2 ** 28, 6] } };
  (huge.codecs as { configuration: Record<string, unknown> }[])[0]!.configuration.chunk_shape = [2 ** 28, 3];
  assert.throws(() => parseArrayZarrJson(huge, "v/zarr.json"), {
    name: "SchemaError",
    pointer: "/codecs/0/configuration/chunk_shape",
  });
  assert.throws(
    () => arrayZarrJson({ ...layout, shardShape: [2 ** 28, 3, 4], chunkShape: [2 ** 28, 3, 2] }),
    {
      name: "SchemaError",
      pointer: "/chunkShape",
    },
  );
  assert.throws(() => parseArrayZarrJson("[]"), { name: "SchemaError", pointer: "" });
});

test("§1 arrayZarrJson refuses a malformed layout before producing a document", () => {
  assert.throws(() => arrayZarrJson({ ...layout, chunkShape: [1, 2, 2] }), {
    name: "SchemaError",
    pointer: "/chunkShape/1",
  });
  assert.throws(() => arrayZarrJson({ ...layout, shardShape: [2, 3] }), {
    name: "SchemaError",
    pointer: "/shardShape",
  });
  assert.throws(() => arrayZarrJson({ ...layout, dimensionNames: ["t"] }), {
    name: "SchemaError",
    pointer: "/dimensionNames",
  });
  assert.throws(() => arrayZarrJson({ ...layout, dtype: "float16" as never }), {
    name: "SchemaError",
    pointer: "/dtype",
  });
});

test("§1 shard keys use the default '/' encoding; the grid rounds ragged edges up", () => {
  assert.equal(shardKey("temperature", [0, 1, 2]), "temperature/c/0/1/2");
  assert.equal(shardKey("", [3]), "c/3");
  assert.equal(shardKey("g/v", []), "g/v/c");
  assert.throws(() => shardKey("v", [0, -1]), { name: "SchemaError", pointer: "/shardIndex/1" });
  assert.throws(() => shardKey("/v", [0]), { name: "SchemaError", pointer: "/arrayPath" });
  assert.deepEqual(shardGrid(layout), [2, 1, 2]);
  assert.deepEqual(shardGrid({ ...layout, shape: [0, 3, 8] }), [0, 1, 2]);
});

test("§2 itemSize and allocTyped cover every reader dtype", () => {
  const want = { float64: 8, float32: 4, int32: 4, int64: 8, uint8: 1, uint32: 4, uint64: 8 } as const;
  for (const [dtype, size] of Object.entries(want)) {
    assert.equal(itemSize(dtype as keyof typeof want), size);
    const a = allocTyped(dtype as keyof typeof want, 3);
    assert.equal(a.byteLength, 3 * size);
    assert.ok([...a].every((v) => v === 0 || v === 0n));
  }
  assert.ok(allocTyped("int64", 1) instanceof BigInt64Array);
  assert.throws(() => allocTyped("int32", -1), { name: "SchemaError" });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemoryStore } from "@zarr-stream/store";
import { fixture } from "@zarr-stream/test-support/fixtures";
import {
  BUNDLED_CORPUS,
  compareDump,
  dumpStore,
  findCase,
  loadCorpus,
  oracleDump,
  runCase,
} from "../src/index.js";

const corpus = await loadCorpus(BUNDLED_CORPUS);
const CREATED = new Date("2026-08-01T12:34:56.789Z");

async function written(
  name: string,
): Promise<{ store: MemoryStore; text: string; manifest: Record<string, unknown> }> {
  const store = new MemoryStore();
  await runCase(findCase(corpus, name), store, {
    writer: { now: () => CREATED, baseUrl: "file:///data/v1.zarr" },
  });
  const text = new TextDecoder().decode(await store.get("output_manifest.json"));
  return { store, text, manifest: JSON.parse(text) };
}

/** Julia/Rust v1 spelling and Rust's key order (reference facts, earthsciio-v1-facts.md). */
const V1_KEYS = [
  "schema",
  "base_url",
  "format",
  "zarr_format",
  "profile",
  "codec",
  "time_dim",
  "dims",
  "vars",
  "chunk_shape",
  "shard_shape",
  "time_shards",
  "last_t",
  "n_records",
  "created_at",
];

describe("§8.1 manifest-v1-compat: EarthSciIO's v1 case through a Single writer", () => {
  test("§8.1 the manifest is v1 in the Julia/Rust spelling, field by field, created_at aside", async () => {
    const { manifest, text } = await written("manifest-v1-compat");
    assert.deepEqual(Object.keys(manifest), V1_KEYS);
    const { created_at, ...rest } = manifest;
    assert.match(String(created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(created_at, "2026-08-01T12:34:56Z");
    // EarthSciIO's v1 case as its Julia/Rust writers record it, at this test's base URL.
    const { created_at: _, ...expected } = fixture<Record<string, unknown>>("manifest-v1.json");
    assert.deepEqual(rest, { ...expected, base_url: "file:///data/v1.zarr" });
    // Python's spelling never leaks in.
    for (const k of ["total_records", "written_at"]) assert.ok(!(k in manifest), k);
    // Rust (serde_json): 2-space indent, insertion order, no trailing newline, f64 fields keep ".0".
    const rustText = JSON.stringify(manifest, null, 2).replace(
      /("(?:t_start|t_end|last_t)": -?\d+)(,?)$/gm,
      "$1.0$2",
    );
    assert.equal(text, rustText);
    assert.match(text, /"last_t": 10800\.0,/);
  });

  test("§8.1 the wasm profile records plain zstd level 5 without checksum", async () => {
    const { manifest } = await written("manifest-v1-compat-wasm");
    assert.equal(manifest.profile, "wasm");
    assert.deepEqual(manifest.codec, { id: "zstd", level: 5, checksum: false });
  });

  test("§1 array zarr.json matches the v1 writers' layout (sharding, inner chain, index chain, fill 0)", async () => {
    const { store } = await written("manifest-v1-compat");
    const meta = JSON.parse(new TextDecoder().decode(await store.get("temperature/zarr.json")));
    assert.equal(meta.zarr_format, 3);
    assert.equal(meta.node_type, "array");
    assert.deepEqual(meta.shape, [4, 3, 4]);
    assert.equal(meta.data_type, "float64");
    assert.deepEqual(meta.chunk_grid, { name: "regular", configuration: { chunk_shape: [2, 3, 4] } });
    assert.deepEqual(meta.chunk_key_encoding, { name: "default", configuration: { separator: "/" } });
    assert.equal(meta.fill_value, 0);
    assert.deepEqual(meta.dimension_names, ["time", "lat", "lon"]);
    assert.deepEqual(meta.attributes._ARRAY_DIMENSIONS, ["time", "lat", "lon"]);
    assert.equal(meta.codecs.length, 1);
    const sharding = meta.codecs[0];
    assert.equal(sharding.name, "sharding_indexed");
    assert.deepEqual(sharding.configuration.chunk_shape, [1, 3, 2]);
    assert.deepEqual(sharding.configuration.codecs, [
      { name: "bytes", configuration: { endian: "little" } },
      {
        name: "blosc",
        configuration: { cname: "zstd", clevel: 5, shuffle: "shuffle", typesize: 8, blocksize: 0 },
      },
    ]);
    assert.deepEqual(sharding.configuration.index_codecs, [
      { name: "bytes", configuration: { endian: "little" } },
      { name: "crc32c" },
    ]);
    assert.equal(sharding.configuration.index_location, "end");
    const group = JSON.parse(new TextDecoder().decode(await store.get("zarr.json")));
    assert.equal(group.node_type, "group");
    assert.equal(group.attributes.title, "EarthSciIO write conformance");
    assert.equal(group.attributes.Conventions, "CF-1.8");
  });

  test("§10 the corpus carries the v1 manifest, so every binding's check compares it field by field", async () => {
    for (const name of ["manifest-v1-compat", "manifest-v1-compat-wasm"]) {
      const c = findCase(corpus, name);
      assert.ok(c.expect.manifest, `${name} carries expect.manifest`);
      const { store } = await written(name);
      const dump = await dumpStore(store, name);
      assert.deepEqual(compareDump(oracleDump(c), dump), [], name);
      // One field off, one spelled the Python way, and one missing are each named.
      const m = dump.manifest as Record<string, unknown>;
      (m.codec as Record<string, unknown>).clevel = 9;
      m.total_records = m.n_records;
      delete m.n_records;
      delete m.created_at;
      assert.deepEqual(compareDump(oracleDump(c), dump), [
        name === "manifest-v1-compat"
          ? 'manifest codec: {"id":"blosc","cname":"zstd","clevel":9,"shuffle":"shuffle"}, expected {"id":"blosc","cname":"zstd","clevel":5,"shuffle":"shuffle"}'
          : 'manifest codec: {"id":"zstd","level":5,"checksum":false,"clevel":9}, expected {"id":"zstd","level":5,"checksum":false}',
        "manifest n_records: missing, expected 4",
        "manifest total_records: unexpected field",
      ]);
      delete dump.manifest;
      assert.deepEqual(compareDump(oracleDump(c), dump), ["manifest: not in the dump"]);
    }
  });
});

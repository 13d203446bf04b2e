import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SchemaError, validateOutputManifestV1 } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import fc from "fast-check";
import {
  normalizePythonV1Spelling,
  readManifestVersioned,
  readOutputManifest,
  readRecord,
  usesPythonV1Spelling,
} from "../src/index.js";
import { putGridArray } from "./helpers.js";

/** A v1 manifest as EarthSciIO's Python binding writes it: json.dumps(m, indent=2, sort_keys=True). */
function pythonText(m: Record<string, unknown>): string {
  const sorted = (x: unknown): unknown =>
    Array.isArray(x)
      ? x.map(sorted)
      : x !== null && typeof x === "object"
        ? Object.fromEntries(
            Object.keys(x)
              .sort()
              .map((k) => [k, sorted((x as Record<string, unknown>)[k])]),
          )
        : x;
  return `${JSON.stringify(sorted(m), null, 2)}\n`;
}

const PYTHON_MANIFEST = {
  schema: "earthsciio/output-manifest/v1",
  base_url: "file:///runs/py.zarr",
  format: "zarr",
  zarr_format: 3,
  profile: "diagnostic",
  codec: { id: "blosc", cname: "zstd", clevel: 5, shuffle: "shuffle" },
  time_dim: "time",
  dims: [
    ["time", 0],
    ["y", 6],
    ["x", 8],
  ],
  vars: [{ name: "u", dims: ["time", "y", "x"], dtype: "float64" }],
  chunk_shape: { time: 1, y: 3, x: 2 },
  shard_shape: { time: 2, y: 3, x: 4 },
  time_shards: [
    { index: 0, t_start: 0, t_end: 3600, n_records: 2 },
    { index: 1, t_start: 7200, t_end: 7200, n_records: 1 },
  ],
  last_t: 7200,
  total_records: 3,
  written_at: "2026-08-01T12:00:00Z",
};

/** u[time 3, y 6, x 8] = 1000 t + 10 y + x + 0.25 in shards {2, 3, 4}, under the Python-spelled manifest. */
async function pythonSpelledStore(): Promise<MemoryStore> {
  const store = new MemoryStore();
  await putGridArray(store, "u", [3, 6, 8], (t, y, x) => 1000 * t + 10 * y + x + 0.25);
  await store.put("output_manifest.json", new TextEncoder().encode(pythonText(PYTHON_MANIFEST)));
  return store;
}

describe("EarthSciIO's Python v1 manifest spelling (read-only normalisation)", () => {
  it("reads a Python-spelled v1 store: the manifest in the contract's spelling, every record bitwise", async () => {
    const store = await pythonSpelledStore();
    const m = await readOutputManifest(store);
    assert.equal(m.n_records, 3);
    assert.equal(m.created_at, "2026-08-01T12:00:00Z");
    assert.deepEqual(m.dims, [
      { name: "time", length: 3 },
      { name: "y", length: 6 },
      { name: "x", length: 8 },
    ]);
    assert.deepEqual(
      m.time_shards.map((s) => s.n),
      [2, 1],
    );
    for (let t = 0; t < 3; t++) {
      const r = await readRecord(store, "u", t, undefined, { manifest: m });
      const want = Float64Array.from(
        { length: 48 },
        (_, i) => 1000 * t + 10 * Math.floor(i / 8) + (i % 8) + 0.25,
      );
      assert.deepEqual(new Uint8Array(r.data.buffer), new Uint8Array(want.buffer), `record ${t}`);
    }
  });

  it("leaves the stored bytes alone, and the writers' manifest read (resume) still refuses it", async () => {
    const store = await pythonSpelledStore();
    const before = await store.get("output_manifest.json");
    await readOutputManifest(store);
    assert.deepEqual(await store.get("output_manifest.json"), before);
    await assert.rejects(
      readManifestVersioned(store),
      /Python spelling: zarr-stream reads such stores but does not write/,
    );
    const unversioned = { ...store, url: store.url, getVersioned: undefined } as unknown as MemoryStore;
    for (const k of ["get", "size", "getRange", "getSuffix"] as const)
      (unversioned as unknown as Record<string, unknown>)[k] = store[k].bind(store);
    await assert.rejects(readManifestVersioned(unversioned), SchemaError);
    // A Julia/Rust-spelled v1 manifest still opens for writers.
    await store.put(
      "output_manifest.json",
      new TextEncoder().encode(JSON.stringify(normalizePythonV1Spelling(PYTHON_MANIFEST))),
    );
    assert.equal((await readManifestVersioned(store))?.manifest.n_records, 3);
  });

  it("refuses a manifest that spells one field both ways, naming the field", () => {
    for (const [extra, pointer] of [
      [{ n_records: 3 }, "/n_records"],
      [{ created_at: "2026-08-01T12:00:00Z" }, "/created_at"],
    ] as const) {
      assert.throws(
        () => normalizePythonV1Spelling({ ...PYTHON_MANIFEST, ...extra }),
        (err: unknown) => err instanceof SchemaError && err.pointer === pointer,
      );
    }
    const shards = structuredClone(PYTHON_MANIFEST);
    (shards.time_shards[0] as Record<string, unknown>).n = 2;
    assert.throws(() => normalizePythonV1Spelling(shards), /\/time_shards\/0\/n: both n_records and n/);
    const dims = structuredClone(PYTHON_MANIFEST) as Record<string, unknown>;
    dims.dims = [["time", 0], ["y"]];
    assert.throws(
      () => normalizePythonV1Spelling(dims),
      /\/dims\/1: a Python-spelled dim must be \[name, length\]/,
    );
  });

  it("passes v2 and Julia/Rust-spelled v1 manifests through untouched", () => {
    const julia = normalizePythonV1Spelling(PYTHON_MANIFEST);
    assert.equal(usesPythonV1Spelling(julia), false);
    assert.equal(normalizePythonV1Spelling(julia), julia);
    const v2 = { ...PYTHON_MANIFEST, schema: "earthsciio/output-manifest/v2" };
    assert.equal(normalizePythonV1Spelling(v2), v2);
  });

  it("property: Julia/Rust v1 → Python spelling → normalised is the original manifest, and it validates", () => {
    const manifestArb = fc
      .record({
        shards: fc.array(
          fc.record({ n: fc.integer({ min: 1, max: 9 }), dt: fc.double({ min: 0, max: 1e6, noNaN: true }) }),
          {
            maxLength: 6,
          },
        ),
        dims: fc.uniqueArray(fc.constantFrom("lat", "lon", "lev", "y", "x"), { minLength: 0, maxLength: 3 }),
        lengths: fc.array(fc.integer({ min: 1, max: 500 }), { minLength: 3, maxLength: 3 }),
      })
      .map(({ shards, dims, lengths }) => {
        let t = 0;
        const timeShards = shards.map((s, index) => {
          const t_start = t;
          t += s.dt + 1;
          return { index, t_start, t_end: t, n: s.n };
        });
        const n = timeShards.reduce((k, s) => k + s.n, 0);
        return {
          schema: "earthsciio/output-manifest/v1",
          base_url: "file:///x.zarr",
          format: "zarr",
          zarr_format: 3,
          profile: "wasm",
          codec: { id: "zstd", level: 5, checksum: false },
          time_dim: "time",
          dims: [{ name: "time", length: n }, ...dims.map((name, i) => ({ name, length: lengths[i]! }))],
          vars: [{ name: "v", dims: ["time", ...dims], dtype: "float32" }],
          chunk_shape: Object.fromEntries(["time", ...dims].map((d) => [d, 1])),
          shard_shape: Object.fromEntries(["time", ...dims].map((d) => [d, 1])),
          time_shards: timeShards,
          last_t: timeShards.length > 0 ? timeShards.at(-1)!.t_end : null,
          n_records: n,
          created_at: "2026-08-01T12:00:00Z",
        };
      });
    fc.assert(
      fc.property(manifestArb, (julia) => {
        const { n_records, created_at, dims, time_shards, ...rest } = julia;
        const python = {
          ...rest,
          dims: dims.map((d) => [d.name, d.name === "time" ? 0 : d.length]),
          time_shards: time_shards.map(({ n, ...s }) => ({ ...s, n_records: n })),
          total_records: n_records,
          written_at: created_at,
        };
        assert.equal(usesPythonV1Spelling(python), true);
        const back = normalizePythonV1Spelling(JSON.parse(pythonText(python)));
        assert.deepEqual(validateOutputManifestV1(back), validateOutputManifestV1(julia));
      }),
      { numRuns: 200, seed: 20261202 },
    );
  });
});

import { profileCodec } from "@zarr-stream/codecs";
import { type ArrayLayout, arrayZarrJson, encodeShard, encodeZarrJson, shardKey } from "@zarr-stream/shard";
import type { OutputManifestV2 } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";

const SHARD = [2, 3, 4];

/**
 * Writes a float64 array `name` [time, y, x] of `shape` by hand (the reader sits below the writer): shards
 * {2, 3, 4}, chunks {1, 3, 2}, every cell of every shard (a partial edge shard included) holding
 * value(t, y, x) at its array coordinates. Returns its layout.
 */
export async function putGridArray(
  store: Store,
  name: string,
  shape: [number, number, number],
  value: (t: number, y: number, x: number) => number,
): Promise<ArrayLayout> {
  const layout: ArrayLayout = {
    shape,
    shardShape: SHARD,
    chunkShape: [1, 3, 2],
    dtype: "float64",
    codec: profileCodec("diagnostic", "float64"),
    dimensionNames: ["time", "y", "x"],
    attributes: {},
  };
  await store.put(`${name}/zarr.json`, encodeZarrJson(arrayZarrJson(layout)));
  const [gt, gy, gx] = shape.map((n, d) => Math.ceil(n / SHARD[d]!)) as [number, number, number];
  for (let st = 0; st < gt; st++)
    for (let sy = 0; sy < gy; sy++)
      for (let sx = 0; sx < gx; sx++) {
        const data = new Float64Array(24);
        for (let t = 0; t < 2; t++)
          for (let y = 0; y < 3; y++)
            for (let x = 0; x < 4; x++) data[t * 12 + y * 4 + x] = value(st * 2 + t, sy * 3 + y, sx * 4 + x);
        await store.put(shardKey(name, [st, sy, sx]), await encodeShard(layout, [st, sy, sx], data));
      }
  return layout;
}

/** A v2 manifest of the putGridArray array `u` [time, y 6, x 8] with `nRecords` committed records. */
export function gridManifest(nRecords: number): OutputManifestV2 {
  return {
    schema: "earthsciio/output-manifest/v2",
    base_url: "memory://hand",
    format: "zarr",
    zarr_format: 3,
    profile: "diagnostic",
    codec: { id: "blosc", cname: "zstd", clevel: 5, shuffle: "shuffle" },
    time_dim: "time",
    dims: [
      { name: "time", length: nRecords },
      { name: "y", length: 6 },
      { name: "x", length: 8 },
    ],
    vars: [{ name: "u", dims: ["time", "y", "x"], dtype: "float64" }],
    chunk_shape: { time: 1, y: 3, x: 2 },
    shard_shape: { time: 2, y: 3, x: 4 },
    time_shards: Array.from({ length: Math.ceil(nRecords / 2) }, (_, i) => ({
      index: i,
      t_start: 2 * i,
      t_end: Math.min(2 * i + 1, nRecords - 1),
      n: Math.min(2, nRecords - 2 * i),
    })),
    last_t: nRecords - 1,
    n_records: nRecords,
    created_at: "2026-12-02T00:00:00Z",
    fingerprint: `sha256:${"a".repeat(64)}`,
    time_mode: "append",
    n_writers: 1,
    region_dims: [],
    commit_seq: nRecords,
    statics: [],
    statics_committed: [],
    blobs: [],
  };
}

export async function putManifest(store: Store, m: OutputManifestV2): Promise<void> {
  await store.put("output_manifest.json", new TextEncoder().encode(JSON.stringify(m)));
}

/** Each call made through a countingStore: method and key. */
export interface StoreCall {
  method: string;
  key: string;
}

/**
 * `inner` with every method call noted in `calls` (methods stay bound to `inner`, so stores with private
 * fields work, and the optional capabilities it has, such as version, stay visible).
 */
export function countingStore<S extends object>(inner: S): { store: S; calls: StoreCall[] } {
  const calls: StoreCall[] = [];
  const store = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push({ method: String(prop), key: String(args[0]) });
        return value.apply(target, args);
      };
    },
  });
  return { store, calls };
}

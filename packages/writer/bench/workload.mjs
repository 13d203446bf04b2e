// The benchmark workload: its parameters and the record values. python/bench_peers.py computes the same
// values from the same formulas (the noisy field from an exact uint32 hash), so every contender
// compresses the same bytes.

/** The defaults: 720 x 1440, 4 variables, 96 records, shard (8, 180, 360), chunk (1, 90, 180). */
export function defaultWorkload() {
  return {
    lat: 720,
    lon: 1440,
    records: 96,
    shard: [8, 180, 360],
    chunk: [1, 90, 180],
    profile: "diagnostic",
    commit_every: 8,
    vars: [
      { name: "t2m", dtype: "float64", kind: "smooth", base: 280, amp: 25 },
      { name: "msl", dtype: "float64", kind: "smooth", base: 101325, amp: 1500 },
      { name: "u10", dtype: "float32", kind: "smooth", base: 0, amp: 12 },
      { name: "noise", dtype: "float32", kind: "noise" },
    ],
    // Distinct records generated before timing and reused cyclically: each record is compressed on its
    // own (chunk time extent 1), so reuse does not help any contender, and generation stays off the clock.
    pool: 4,
    // Read-back: this record's box, which touches 2 x 2 shards per variable.
    read_record: 50,
    read_region: [
      [0, 360],
      [0, 720],
    ],
    cold: true,
    cold_reps: 5,
    warm_reps: 5,
  };
}

/** The bench:quick workload: tiny, every contender, a few seconds each. */
export function quickWorkload() {
  return {
    ...defaultWorkload(),
    lat: 96,
    lon: 192,
    records: 8,
    shard: [8, 24, 96],
    chunk: [1, 24, 48],
    read_record: 5,
    read_region: [
      [0, 48],
      [0, 144],
    ],
    pool: 2,
    cold: false,
    warm_reps: 2,
  };
}

const ARRAYS = { float64: Float64Array, float32: Float32Array, int32: Int32Array, uint8: Uint8Array };

export function itemSize(dtype) {
  const A = ARRAYS[dtype];
  if (A === undefined)
    throw new Error(`the bench generates no ${dtype} data (float64, float32, int32, uint8)`);
  return A.BYTES_PER_ELEMENT;
}

/** Uncompressed bytes of the whole workload. */
export function totalBytes(wl) {
  return wl.vars.reduce((s, v) => s + wl.records * wl.lat * wl.lon * itemSize(v.dtype), 0);
}

/**
 * Record `r` of variable `k` as a row-major (lat, lon) typed array. Integer dtypes take the floor of the
 * same double (bench_peers.py: np.floor), so every contender stores the same integers; `scale` (default
 * 10) is the noise's range.
 */
export function field(wl, k, r) {
  const { lat, lon } = wl;
  const v = wl.vars[k];
  itemSize(v.dtype);
  const out = new ARRAYS[v.dtype](lat * lon);
  const int = v.dtype === "int32" || v.dtype === "uint8";
  if (v.kind === "noise") {
    const c = (r * 40503 + k * 97) >>> 0;
    const scale = v.scale ?? 10;
    for (let i = 0; i < lat * lon; i++) {
      let h = (Math.imul(i, 2654435761 | 0) + c) >>> 0;
      h = (h ^ (h >>> 15)) >>> 0;
      h = Math.imul(h, 2246822519 | 0) >>> 0;
      h = (h ^ (h >>> 13)) >>> 0;
      const x = (h / 4294967296) * scale;
      out[i] = int ? Math.floor(x) : x;
    }
    return out;
  }
  for (let i = 0; i < lat; i++) {
    const a = Math.sin(i * (3 / lat) + r * 0.1 + k);
    for (let j = 0; j < lon; j++) {
      const x =
        v.base + v.amp * a * Math.cos(j * (4 / lon) - k) + 0.01 * v.amp * Math.sin(i * j * (1 / 9000));
      out[i * lon + j] = int ? Math.floor(x) : x;
    }
  }
  return out;
}

/** pool[k][r]: the distinct records of variable k. */
export function makePool(wl) {
  return wl.vars.map((_, k) => Array.from({ length: wl.pool }, (_, r) => field(wl, k, r)));
}

/** The zarr-stream schema of the workload. */
export function streamSchema(wl) {
  return {
    dims: [
      ["time", 0],
      ["lat", wl.lat],
      ["lon", wl.lon],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: wl.vars.map((v) => ({ name: v.name, dims: ["time", "lat", "lon"], dtype: v.dtype })),
    statics: [],
    chunk_shape: { time: wl.chunk[0], lat: wl.chunk[1], lon: wl.chunk[2] },
    shard_shape: { time: wl.shard[0], lat: wl.shard[1], lon: wl.shard[2] },
    profile: wl.profile,
  };
}

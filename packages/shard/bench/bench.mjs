#!/usr/bin/env node
// Shard-level throughput: encodeShard / decodeShard of a 16 MiB float64 shard (64 inner chunks of 256 KiB)
// per profile on every available codec backend, readShardRegion of one chunk and of one row of chunks, and
// copyStrided of a box with short inner runs. Run after `npx tsc -b packages/shard`:
//   npm run bench -w packages/shard
import { codecBackend, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { MemoryStore } from "@zarr-stream/store";
import { allocTyped, copyStrided, decodeShard, encodeShard, readShardRegion } from "../dist/src/index.js";

const REPS = Number(process.env.BENCH_REPS ?? 3);
const shardShape = [4, 512, 1024];
const chunkShape = [1, 128, 256];
const MIB = (shardShape[0] * shardShape[1] * shardShape[2] * 8) / 2 ** 20;

function smoothField() {
  const v = allocTyped("float64", shardShape[0] * shardShape[1] * shardShape[2]);
  for (let i = 0; i < v.length; i++) v[i] = 280 + 15 * Math.sin(i / 500) + 3 * Math.cos(i / 37) + i * 1e-7;
  return v;
}

async function best(fn) {
  let t = Number.POSITIVE_INFINITY;
  let out;
  for (let r = 0; r < REPS; r++) {
    const t0 = performance.now();
    out = await fn();
    t = Math.min(t, performance.now() - t0);
  }
  return { ms: t, out };
}

const backends = ["wasm"];
try {
  setCodecBackend("native");
  backends.unshift("native");
} catch {
  // native addon not built: wasm only
}
const data = smoothField();
console.log(`shard [${shardShape}] chunk [${chunkShape}] float64 = ${MIB} MiB, best of ${REPS}`);
for (const backend of backends) {
  setCodecBackend(backend);
  for (const profile of ["diagnostic", "checkpoint", "wasm"]) {
    const layout = {
      shape: shardShape,
      shardShape,
      chunkShape,
      dtype: "float64",
      codec: profileCodec(profile, "float64"),
      dimensionNames: ["time", "lat", "lon"],
      attributes: {},
    };
    const enc = await best(() => encodeShard(layout, [0, 0, 0], data));
    const out = allocTyped("float64", data.length);
    const dec = await best(() => decodeShard(layout, enc.out, "k", out));
    const store = new MemoryStore();
    await store.put("k", enc.out);
    const one = await best(() =>
      readShardRegion(
        store,
        "k",
        layout,
        [0, 0, 0],
        [
          [1, 2],
          [128, 256],
          [256, 512],
        ],
      ),
    );
    const row = await best(() =>
      readShardRegion(
        store,
        "k",
        layout,
        [0, 0, 0],
        [
          [1, 2],
          [128, 256],
          [0, 1024],
        ],
      ),
    );
    console.log(
      `${codecBackend()} ${profile.padEnd(10)} ratio ${(data.byteLength / enc.out.byteLength).toFixed(2)}x  ` +
        `encode ${(MIB / (enc.ms / 1000)).toFixed(0).padStart(5)} MiB/s  decode ${(MIB / (dec.ms / 1000)).toFixed(0).padStart(5)} MiB/s  ` +
        `region 1 chunk ${one.ms.toFixed(2)} ms, 1 row of 4 chunks ${row.ms.toFixed(2)} ms`,
    );
  }
}
setCodecBackend(codecBackend());

// copyStrided: a [4, 512, 1024] -> box [4, 500, 7] (7-element inner runs) and a box with whole trailing dims
const src = smoothField();
const narrow = allocTyped("float64", 4 * 500 * 7);
const t1 = await best(() =>
  copyStrided(src, shardShape, [0, 3, 100], narrow, [4, 500, 7], [0, 0, 0], [4, 500, 7]),
);
const wide = allocTyped("float64", 2 * 512 * 1024);
const t2 = await best(() =>
  copyStrided(src, shardShape, [1, 0, 0], wide, [2, 512, 1024], [0, 0, 0], [2, 512, 1024]),
);
console.log(
  `copyStrided short runs: ${((4 * 500 * 7) / 1e6 / (t1.ms / 1000)).toFixed(0)} M elements/s; ` +
    `whole trailing dims (8 MiB): ${(8 / (t2.ms / 1000)).toFixed(0)} MiB/s`,
);

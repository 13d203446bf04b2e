import { rmSync } from "node:fs";
import { codecBackend, encode, profileCodec } from "@zarr-stream/codecs";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";

const LAT = 720,
  LON = 1440,
  N = Number(process.env.N ?? 24);
const schema = {
  dims: [
    ["time", 0],
    ["lat", LAT],
    ["lon", LON],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [
    { name: "t2m", dims: ["time", "lat", "lon"], dtype: "float64" },
    { name: "u10", dims: ["time", "lat", "lon"], dtype: "float32" },
  ],
  statics: [],
  chunk_shape: { time: 1, lat: 90, lon: 180 },
  shard_shape: { time: 8, lat: 180, lon: 360 },
  profile: "diagnostic",
};
const f64 = new Float64Array(LAT * LON),
  f32 = new Float32Array(LAT * LON);
function fill(r) {
  for (let i = 0; i < LAT; i++)
    for (let j = 0; j < LON; j++) {
      const v = 280 + 10 * Math.sin(i / 50 + r / 10) * Math.cos(j / 70);
      f64[i * LON + j] = v;
      f32[i * LON + j] = v / 10;
    }
}
fill(0);
const dir = "/tmp/bench/store";
rmSync(dir, { recursive: true, force: true });
const w = await ZarrStreamWriter.create(new FsStore(dir), schema, { kind: "single" });
let t0 = performance.now();
let fillMs = 0;
for (let r = 0; r < N; r++) {
  const f = performance.now();
  fill(r);
  fillMs += performance.now() - f;
  await w.writeRecord(r, { t2m: f64, u10: f32 });
  if ((r + 1) % 8 === 0) await w.flush();
}
await w.close();
const ms = performance.now() - t0 - fillMs;
const bytes = N * LAT * LON * 12;
console.log(
  codecBackend(),
  `writer: ${(bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s (${ms.toFixed(0)} ms, fill ${fillMs.toFixed(0)} ms)`,
);
// compression-only limit on the same chunks (90x180)
const spec64 = profileCodec("diagnostic", "float64"),
  spec32 = profileCodec("diagnostic", "float32");
const chunk64 = new Uint8Array(new Float64Array(f64.buffer, 0, 90 * 180).slice().buffer),
  chunk32 = new Uint8Array(new Float32Array(f32.buffer, 0, 90 * 180).slice().buffer);
const nChunks = (LAT / 90) * (LON / 180) * N;
t0 = performance.now();
const jobs = [];
for (let i = 0; i < nChunks; i++) {
  jobs.push(encode(spec64, chunk64));
  jobs.push(encode(spec32, chunk32));
  if (jobs.length >= 64) await Promise.all(jobs.splice(0));
}
await Promise.all(jobs);
const cms = performance.now() - t0;
console.log(`compress-only (all cores): ${(bytes / 1e6 / (cms / 1000)).toFixed(0)} MB/s`);

import { openArray, readOutputManifest, readRecord } from "@zarr-stream/reader";
import { MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";

const N = Number(process.argv[2] ?? 100000);
const schema = {
  dims: [
    ["time", 0],
    ["x", 1],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
  statics: [],
  chunk_shape: { time: 1, x: 1 },
  shard_shape: { time: 8, x: 1 },
  profile: "diagnostic",
};
const store = new MemoryStore();
const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
const one = new Float32Array(1);
const commit = async () => w.commit([await w.flush()]);
let r = 0;
const pause = process.env.PAUSE === "1";
for (const n of [1000, 10000, N]) {
  for (; r < n; r++) {
    one[0] = r;
    await w.writeRecord(r, { v: one });
    if ((r + 1) % 1000 === 0) await commit();
  }
  const at = r;
  for (let k = 0; k < 15; k++) {
    one[0] = r;
    await w.writeRecord(r, { v: one });
    r++;
    await commit();
  }
  const out = [];
  if (process.env.SPLIT === "1") {
    let t = performance.now();
    await readOutputManifest(store);
    out.push("m" + (performance.now() - t).toFixed(2));
    t = performance.now();
    await openArray(store, "v");
    out.push("a" + (performance.now() - t).toFixed(2));
  }
  for (let i = 0; i < 3; i++) {
    if (pause) await new Promise((res) => setTimeout(res, 0));
    const t = performance.now();
    await readRecord(store, "v", at - 1);
    out.push((performance.now() - t).toFixed(2));
  }
  console.log(n, out.join(" "));
}

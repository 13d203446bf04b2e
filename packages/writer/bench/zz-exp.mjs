import { readFileSync } from "node:fs";
import { allocTypedUnfilled, readShardInto, shardKey } from "@zarr-stream/shard";
import { readArrayLayout } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";
const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const store = new FsStore(process.argv[3]);
const configs = JSON.parse(process.argv[4]); // [{w, overlap}]
const layouts = {}; for (const v of wl.vars) layouts[v.name] = await readArrayLayout(store, v.name);
const outs = wl.vars.map((v) => [0, 1].map(() => allocTypedUnfilled(layouts[v.name].dtype, 8 * wl.lat * wl.lon)));
const pools = {};
function pool(w) { return (pools[w] ??= Array.from({ length: w }, () => { let b; return { take: (n) => (b && b.length >= n ? b : (b = new Uint8Array(n))) }; })); }
async function readCall(layout, name, t, out, bufs) {
  const shards = [];
  for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) shards.push([t, y, x]);
  let next = 0;
  await Promise.all(bufs.map(async (scratch) => {
    while (next < shards.length) {
      const idx = shards[next++];
      const sel = idx.map((i, d) => [i * layout.shardShape[d], Math.min((i + 1) * layout.shardShape[d], layout.shape[d])]);
      await readShardInto(store, shardKey(name, idx), layout, idx, sel, { data: out, shape: [8, wl.lat, wl.lon], start: [0, sel[1][0], sel[2][0]], zeroed: false }, scratch);
    }
  }));
}
const res = {};
for (let rep = 0; rep < 3; rep++) for (const c of configs) {
  const cpu0 = process.cpuUsage(); const t0 = performance.now();
  for (const [k, v] of wl.vars.entries()) {
    const layout = layouts[v.name];
    if (!c.overlap) { for (let t = 0; t < 12; t++) await readCall(layout, v.name, t, outs[k][0], pool(c.w)); }
    else {
      // two calls in flight, each with half the workers
      const a = pool(c.w).slice(0, c.w / 2), b = pool(c.w).slice(c.w / 2);
      let prev = readCall(layout, v.name, 0, outs[k][0], a);
      for (let t = 1; t < 12; t++) { const cur = readCall(layout, v.name, t, outs[k][t % 2], t % 2 ? b : a); await prev; prev = cur; }
      await prev;
    }
  }
  const cpu = process.cpuUsage(cpu0); const s = (performance.now() - t0) / 1000;
  const key = JSON.stringify(c); (res[key] ??= []).push(`${(2.388e3 / s).toFixed(0)}MB/s cpu ${((cpu.user + cpu.system) / 1e6).toFixed(2)}`);
}
console.log(res);

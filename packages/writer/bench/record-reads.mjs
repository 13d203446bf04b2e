// One-record reads of one store by zarr-stream and by TensorStore, taking turns: on a shared host whose
// speed drifts from minute to minute, the bench's contenders read minutes apart, each its own store; here
// both read the same bytes, alternating, so a drift moves both alike. Each turn is a process of its own
// that reads the bench's record box cold (median of cold_reps, page cache dropped first: needs root) and
// warm (best of warm_reps), as the bench does (one store handle and `out` buffers on our side; the arrays
// opened for every read on TensorStore's, as its contender does).
//   node bench/record-reads.mjs WORKLOAD.json STORE_DIR [pairs]    (STORE_DIR from profile-write.mjs)
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { PYTHON } from "./harness.mjs";
import { recordBoxReader } from "./record-box.mjs";

const PEERS = fileURLToPath(new URL("../../../python/bench_peers.py", import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function ours(wl, dir) {
  // The bench's own record box; the generator's values are not needed, so its check is never called.
  const read = recordBoxReader(new FsStore(dir), wl, undefined);
  const timed = async () => {
    const t = performance.now();
    await read();
    return performance.now() - t;
  };
  await read();
  const colds = [];
  for (let i = 0; i < (wl.cold_reps ?? 5); i++) {
    execFileSync("sync");
    writeFileSync("/proc/sys/vm/drop_caches", "3\n");
    colds.push(await timed());
  }
  let warm = Number.POSITIVE_INFINITY;
  for (let i = 0; i < (wl.warm_reps ?? 5); i++) warm = Math.min(warm, await timed());
  return { cold_ms: median(colds), warm_ms: warm };
}

function turn(side, wlFile, dir) {
  const [cmd, args] =
    side === "zarr-stream"
      ? [process.execPath, [fileURLToPath(import.meta.url), "--ours", wlFile, dir]]
      : [PYTHON, [PEERS, "tensorstore-record-reads", wlFile, dir]];
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${side}: ${r.stderr.trim().split("\n").at(-1)}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1));
}

if (process.argv[2] === "--ours") {
  const wl = JSON.parse(readFileSync(process.argv[3], "utf8"));
  console.log(JSON.stringify(await ours(wl, process.argv[4])));
} else {
  const [wlFile, dir, pairs = "4"] = process.argv.slice(2);
  const got = { "zarr-stream": [], tensorstore: [] };
  for (let i = 0; i < Number(pairs); i++) {
    // Who goes first alternates too, so an effect of the order cancels out.
    const order = i % 2 === 0 ? ["zarr-stream", "tensorstore"] : ["tensorstore", "zarr-stream"];
    for (const side of order) {
      const r = turn(side, wlFile, dir);
      got[side].push(r);
      console.log(`pair ${i + 1} ${side}: cold ${r.cold_ms.toFixed(1)} ms, warm ${r.warm_ms.toFixed(1)} ms`);
    }
  }
  const m = (side, k) => median(got[side].map((r) => r[k]));
  for (const k of ["cold_ms", "warm_ms"]) {
    const [zs, ts] = [m("zarr-stream", k), m("tensorstore", k)];
    console.log(
      `${k}: zarr-stream ${zs.toFixed(1)}, TensorStore ${ts.toFixed(1)} (medians over pairs); TensorStore / zarr-stream ${(ts / zs).toFixed(2)}x`,
    );
  }
}

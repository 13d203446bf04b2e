// The read-all pass over one store by zarr-stream, TensorStore and zarr-python+zarrs, taking turns: on a
// shared host whose speed drifts, the bench's contenders read their own stores minutes apart; here each
// reads the same bytes (a store profile-write.mjs wrote, which all three read as Zarr v3), alternating,
// so a drift moves all alike. Each turn is a process of its own making `passes` passes and reporting its
// best MB/s and its CPU seconds (user + system, every thread) per pass, the figure a busy neighbour
// disturbs least.
//   node bench/read-all-turns.mjs WORKLOAD.json STORE_DIR [turns] [passes] [contenders]
//   contenders: comma-separated, of zarr-stream, tensorstore, zarr-python-zarrs (default: all three)
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { PYTHON } from "./harness.mjs";
import { timedPasses } from "./read-all.mjs";
import { totalBytes } from "./workload.mjs";

const PEERS = fileURLToPath(new URL("../../../python/bench_peers.py", import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function ours(wl, dir, passes) {
  const times = await timedPasses(new FsStore(dir), wl, passes);
  return {
    read_all_MBps: totalBytes(wl) / 1e6 / Math.min(...times.map((p) => p.s)),
    cpu_s: times.map((p) => p.cpu),
  };
}

function turn(side, wlFile, dir, passes) {
  const [cmd, args] =
    side === "zarr-stream"
      ? [process.execPath, [fileURLToPath(import.meta.url), "--ours", wlFile, dir, String(passes)]]
      : [PYTHON, [PEERS, `${side}-read-all`, wlFile, dir, String(passes)]];
  const env = side === "zarr-stream" ? { ...process.env, ZSTREAM_CODECS: "native" } : process.env;
  const r = spawnSync(cmd, args, { encoding: "utf8", env });
  if (r.status !== 0) throw new Error(`${side}: ${r.stderr.trim().split("\n").at(-1)}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1));
}

if (process.argv[2] === "--ours") {
  const wl = JSON.parse(readFileSync(process.argv[3], "utf8"));
  console.log(JSON.stringify(await ours(wl, process.argv[4], Number(process.argv[5] ?? 3))));
} else {
  const [wlFile, dir, turns = "3", passes = "3", only] = process.argv.slice(2);
  const sides = only?.split(",") ?? ["zarr-stream", "tensorstore", "zarr-python-zarrs"];
  const got = Object.fromEntries(sides.map((s) => [s, []]));
  console.log(`${cpus()[0]?.model}, ${cpus().length} cpus, load ${loadavg().map((x) => x.toFixed(2))}`);
  for (let i = 0; i < Number(turns); i++) {
    // The order rotates, so an effect of going first or last cancels out.
    const order = sides.map((_, k) => sides[(k + i) % sides.length]);
    for (const side of order) {
      const r = turn(side, wlFile, dir, Number(passes));
      got[side].push(r);
      console.log(
        `turn ${i + 1} ${side}: ${r.read_all_MBps.toFixed(0)} MB/s, cpu ${r.cpu_s.map((c) => c.toFixed(2)).join("/")} s (load ${loadavg()[0].toFixed(2)})`,
      );
    }
  }
  const mbps = (s) => median(got[s].map((r) => r.read_all_MBps));
  const cpu = (s) => median(got[s].flatMap((r) => r.cpu_s.slice(1)));
  for (const s of sides) {
    const ratios = sides
      .filter((o) => o !== s && s === "zarr-stream")
      .map((o) => `${(mbps(s) / mbps(o)).toFixed(2)}x ${o} (cpu ${(cpu(o) / cpu(s)).toFixed(2)}x)`);
    console.log(
      `${s}: ${mbps(s).toFixed(0)} MB/s (median of turns' best), ${cpu(s).toFixed(2)} cpu s per pass (median, first pass left out)${ratios.length ? `; ${ratios.join(", ")}` : ""}`,
    );
  }
}

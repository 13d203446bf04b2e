// The benchmark harness: runs zarr-stream and the peers on the same workload in one run, each contender
// in its own process, and collects write/read speed, peak RSS, the compression-only limit and the
// scaling curves. bench.mjs is the command line; test/bench-harness.test.ts runs runBench on a tiny workload.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runJsPeers } from "./js-peers.mjs";
import { lastJson, run } from "./run-process.mjs";
import { defaultWorkload, itemSize, quickWorkload, totalBytes } from "./workload.mjs";

export { lastJson, run };

const here = fileURLToPath(new URL(".", import.meta.url));
const repo = join(here, "..", "..", "..");
export const PYTHON = join(repo, ".venv", "bin", "python");
const PEERS = join(repo, "python", "bench_peers.py");

export const CONTENDERS = [
  "zarr-stream",
  "zarr-stream-wasm",
  "zarr-python",
  "zarr-python-zarrs",
  "tensorstore",
];

function spawnLines(args, env, onLine) {
  const p = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let buf = "";
  let err = "";
  p.stdout.on("data", (d) => {
    buf += d;
    let i = buf.indexOf("\n");
    while (i >= 0) {
      onLine(buf.slice(0, i));
      buf = buf.slice(i + 1);
      i = buf.indexOf("\n");
    }
  });
  p.stderr.on("data", (d) => {
    err += d;
  });
  const done = new Promise((resolve, reject) =>
    p.on("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`writer process exited ${code}: ${err.slice(-2000)}`)),
    ),
  );
  return { p, done };
}

function deferred() {
  let resolve;
  const promise = new Promise((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** zarr-stream as 4 OS processes (owner + 3 contributors), tokens piped through this process. */
async function runProcs4(wlFile, dir, env) {
  const script = join(here, "contender.mjs");
  const readyWaiters = [];
  const finals = [];
  const { promise: ownerIsReady, resolve: ownerReady } = deferred();
  const owner = spawnLines([script, "procs4-owner", wlFile, dir, "0"], env, (line) => {
    if (line === "ready") ownerReady();
    else finals.push(JSON.parse(line));
  });
  await ownerIsReady;
  const contributors = [1, 2, 3].map((id) => {
    const { promise, resolve: ready } = deferred();
    readyWaiters.push(promise);
    return spawnLines([script, "procs4-contributor", wlFile, dir, String(id)], env, (line) => {
      if (line === "ready") return ready();
      const msg = JSON.parse(line);
      if (msg.done) finals.push(msg);
      else owner.p.stdin.write(`${line}\n`);
    });
  });
  await Promise.all(readyWaiters);
  for (const c of [owner, ...contributors]) c.p.stdin.write("go\n");
  await Promise.all([owner.done, ...contributors.map((c) => c.done)]);
  const write_s = Math.max(...finals.map((f) => f.write_s));
  return {
    write_s,
    peak_rss_MB: finals.reduce((s, f) => s + f.peak_rss_MB, 0),
    per_process_peak_rss_MB: finals.map((f) => f.peak_rss_MB),
  };
}

/** One measurement of one contender (its own process or processes). */
export async function measure(name, wlFile, wl, workDir) {
  const dir = join(workDir, name);
  const node = (mode, env = {}) =>
    run(process.execPath, [join(here, "contender.mjs"), mode, wlFile, dir], env).then(lastJson);
  switch (name) {
    case "zarr-stream":
      return node("single", { ZSTREAM_CODECS: "native" });
    case "zarr-stream-wasm":
      // Stands for a machine without the native addon, so without its direct writes either.
      return node("single", { ZSTREAM_CODECS: "wasm", ZSTREAM_NATIVE_FS: "0" });
    case "zarr-stream-node-fs":
      // The same writer with node:fs alone (through the page cache, as every peer writes, and four pool
      // trips per read): what the addon's direct writes and one-job reads are worth.
      return node("single", { ZSTREAM_CODECS: "native", ZSTREAM_NATIVE_FS: "0" });
    case "zarr-stream-preload":
      // Experiment: the same writer with another libzstd interposed (ZS_BENCH_PRELOAD=/path/libzstd.so).
      return node("single", { ZSTREAM_CODECS: "native", LD_PRELOAD: process.env.ZS_BENCH_PRELOAD ?? "" });
    case "zarr-stream-4regions":
      return node("regions4", { ZSTREAM_CODECS: "native" });
    case "zarr-stream-4procs": {
      const r = await runProcs4(wlFile, dir, { ZSTREAM_CODECS: "native" });
      return { ...r, write_MBps: totalBytes(wl) / 1e6 / r.write_s };
    }
    case "zarr-python":
    case "zarr-python-zarrs":
    case "tensorstore":
    case "limit":
      return run(PYTHON, [PEERS, name, wlFile, dir]).then(lastJson);
    default:
      throw new Error(`unknown contender ${name}`);
  }
}

/** Keeps each figure's best over rounds (times and CPU the lowest; peak RSS the worst, to stay conservative). */
export function best(a, b) {
  if (!a) return b;
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (typeof v !== "number" || typeof a[k] !== "number") continue;
    // Throughputs (write_MBps, and the limit's compress_MBps_1core and _allcores) keep the highest.
    if (k.includes("_MBps")) out[k] = Math.max(a[k], v);
    else if (k.endsWith("_ms") || k === "write_s" || k.endsWith("_cpu_s")) out[k] = Math.min(a[k], v);
    else if (k.includes("rss")) out[k] = Math.max(a[k], v);
  }
  out.load_avg = [...(a.load_avg ?? []), ...(b.load_avg ?? [])];
  return out;
}

/** Bytes of the time-shard buffers a Single writer holds open: one time shard of every variable. */
function openBufferMB(wl) {
  return (wl.shard[0] * wl.lat * wl.lon * wl.vars.reduce((s, v) => s + itemSize(v.dtype), 0)) / 2 ** 20;
}

function poolMB(wl) {
  return (wl.pool * wl.lat * wl.lon * wl.vars.reduce((s, v) => s + itemSize(v.dtype), 0)) / 2 ** 20;
}

/**
 * Runs everything and returns the results object (also written to `json` when given).
 * opts: {quick, workload (overrides), rounds, json, workDir, scaling, curves (scaling curve names), variants,
 * only (names), jsPeers (true or {browser}: also the JavaScript peers, js-peers.mjs), log}
 */
export async function runBench(opts = {}) {
  const quick = opts.quick ?? false;
  const log = opts.log ?? ((s) => process.stderr.write(`${s}\n`));
  const wl = { ...(quick ? quickWorkload() : defaultWorkload()), ...(opts.workload ?? {}) };
  const rounds = opts.rounds ?? (quick ? 1 : 2);
  const workDir = opts.workDir ?? join(tmpdir(), `zs-bench-${process.pid}`);
  mkdirSync(workDir, { recursive: true });
  const wlFile = join(workDir, "workload.json");
  writeFileSync(wlFile, JSON.stringify(wl));
  const variants = opts.variants ?? [
    "zarr-stream-node-fs",
    "zarr-stream-4regions",
    "zarr-stream-4procs",
    ...(process.env.ZS_BENCH_PRELOAD ? ["zarr-stream-preload"] : []),
  ];
  const names = ["limit", ...CONTENDERS, ...variants].filter((n) => !opts.only || opts.only.includes(n));
  const results = {};
  const errors = {};
  for (let round = 0; round < rounds; round++) {
    for (const name of names) {
      const load = loadavg()[0];
      try {
        const r = await measure(name, wlFile, wl, workDir);
        r.load_avg = [Number(load.toFixed(2))];
        results[name] = best(results[name], r);
        log(`round ${round + 1}/${rounds} ${name}: ${summarize(r)} (load ${load.toFixed(2)})`);
      } catch (e) {
        errors[name] = e.message;
        log(`round ${round + 1}/${rounds} ${name}: FAILED ${e.message.split("\n")[0]}`);
      }
    }
  }
  const limit = results.limit ?? {};
  const contenders = Object.fromEntries(
    [...CONTENDERS, ...variants].map((n) => [n, results[n] ?? { error: errors[n] ?? "not run" }]),
  );
  const jsPeers = opts.jsPeers
    ? await runJsPeers({ wl, workDir, pairs: rounds, browser: opts.jsPeers.browser, log })
    : undefined;
  const scaling = opts.scaling === false ? {} : await runScaling(quick, workDir, wl, log, opts.curves);
  const out = {
    workload: wl,
    machine: { cpus: availableParallelism(), loadavg_end: loadavg(), node: process.version, rounds },
    limit: {
      compress_MBps_1core: limit.compress_MBps_1core ?? null,
      compress_MBps_allcores: limit.compress_MBps_allcores ?? null,
      ...(errors.limit ? { error: errors.limit } : {}),
    },
    contenders,
    ratios: ratios(contenders, limit),
    memory: {
      open_time_shard_buffers_MB: openBufferMB(wl),
      input_pool_MB: poolMB(wl),
    },
    scaling,
    ...(jsPeers ? { js_peers: jsPeers } : {}),
  };
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(out, null, 2)}\n`);
  return out;
}

function summarize(r) {
  return Object.entries(r)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => `${k}=${Number(v.toFixed(2))}`)
    .join(" ");
}

function ratios(contenders, limit) {
  const zs = contenders["zarr-stream"]?.write_MBps;
  const out = {};
  if (typeof zs !== "number") return out;
  if (limit.compress_MBps_allcores) out["zarr-stream/limit_allcores"] = zs / limit.compress_MBps_allcores;
  if (limit.compress_MBps_1core) out["zarr-stream/limit_1core"] = zs / limit.compress_MBps_1core;
  for (const [n, c] of Object.entries(contenders)) {
    if (n !== "zarr-stream" && typeof c.write_MBps === "number") out[`zarr-stream/${n}`] = zs / c.write_MBps;
  }
  return out;
}

async function runScaling(quick, workDir, wl, log, only) {
  const curve = async (name, params) => {
    if (only && !only.includes(name)) return { error: "not run" };
    const t = performance.now();
    try {
      const r = lastJson(
        await run(process.execPath, [join(here, "scaling.mjs"), name, JSON.stringify(params)], {
          ZSTREAM_CODECS: "native",
        }),
      );
      log(`scaling ${name}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
      return r;
    } catch (e) {
      log(`scaling ${name}: FAILED ${e.message.split("\n")[0]}`);
      return { error: e.message };
    }
  };
  const small = {
    ...wl,
    lat: 90,
    lon: 180,
    shard: [8, 90, 180],
    chunk: [1, 45, 90],
    pool: 2,
  };
  return {
    commit_vs_writers: await curve("commitVsWriters", {
      writers: quick ? [1, 4, 16] : [1, 4, 16, 64, 256, 1024, 4096],
      reps: quick ? 1 : 3,
    }),
    manifest_vs_records: await curve("manifestVsRecords", {
      checkpoints: quick ? [10, 100] : [1000, 10000, 100000],
      commitEvery: quick ? 8 : 1000,
      reps: quick ? 2 : 15,
    }),
    rss_and_read_vs_records: await curve("rssAndReadVsRecords", {
      workload: small,
      checkpoints: quick ? [8, 16] : [8, 100, 1000, 10000],
      dir: join(workDir, "scaling-store"),
    }),
    rss_vs_records_indexed: await curve("rssAndReadVsRecords", {
      workload: small,
      checkpoints: quick ? [8, 16] : [8, 100, 1000, 10000],
      dir: join(workDir, "scaling-store-indexed"),
      indexed: true,
    }),
  };
}

export function hasPython() {
  return existsSync(PYTHON);
}

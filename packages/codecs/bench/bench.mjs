#!/usr/bin/env node
// Throughput of encode/decode per profile on 64 MiB of smooth and of random float64: native, our SIMD wasm
// and numcodecs' wasm with 1 and 2 chunks in flight, next to the limit line, numcodecs' c-blosc (Python,
// its own threads over each chunk's blocks) on the same bytes.
// Run: npm run bench -w packages/codecs (after `npx tsc -b packages/codecs`). BENCH_MIB=16 for a quick run.
//
// What "threads" means on each side: native runs in a child process whose libuv pool has that many
// threads (UV_THREADPOOL_SIZE), with that many chunks in flight; wasm runs that many chunks in flight on
// its worker threads; c-blosc runs its own threads over the blocks of one chunk (a 1 MiB chunk has 4
// blocks at clevel 5 and 2 at clevel 7 in c-blosc's frames). Every column decodes the same frames into
// the same outputs on both sides:
// - decompress: a fresh output per chunk (a Python bytes object there, a Uint8Array here, whose external
//   memory also drives V8's garbage collector: part of what a Node caller of decode pays);
// - into-buffer: one chunk per call into a chunk-sized buffer the caller holds (decodeBoxes here,
//   c-blosc's `dest` there);
// - batch: every chunk of the dataset into its place in one buffer of the whole dataset, as the reader
//   decodes a shard: one decodeBoxes call here (its frames split over the pool's threads), a Python loop
//   of c-blosc calls into slices of one buffer there.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { decode, decodeBoxes, encode, profileCodec, setCodecBackend } from "../dist/src/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const TOTAL = Number(process.env.BENCH_MIB ?? 64) << 20;
const CHUNK = 1 << 20;
const REPS = Number(process.env.BENCH_REPS ?? 2);
const PROFILES = (process.env.BENCH_PROFILES ?? "diagnostic,checkpoint,wasm").split(",");

// wasm runs on the thread that calls it, so "2 threads" for wasm means two worker threads, each
// encoding and decoding half of the chunks; the main thread times both phases.
if (!isMainThread) {
  const { shared, first, count, profile } = workerData;
  setCodecBackend("numcodecs");
  const spec = profileCodec(profile, "float64");
  const view = new Uint8Array(shared);
  const chunks = Array.from({ length: count }, (_, i) =>
    view.subarray((first + i) * CHUNK, (first + i + 1) * CHUNK),
  );
  await decode(spec, await encode(spec, chunks[0]), CHUNK); // compile and warm the wasm modules
  let frames = [];
  parentPort.on("message", async (phase) => {
    if (phase === "compress") {
      frames = [];
      for (const c of chunks) frames.push(await encode(spec, c));
    } else {
      for (const f of frames) await decode(spec, f, CHUNK);
    }
    parentPort.postMessage(frames.reduce((a, f) => a + f.length, 0));
  });
  parentPort.postMessage("ready");
}

function smooth() {
  const v = new Float64Array(TOTAL / 8);
  for (let i = 0; i < v.length; i++) v[i] = 280 + 15 * Math.sin(i / 500) + 3 * Math.cos(i / 37) + i * 1e-6;
  return new Uint8Array(v.buffer);
}
function random() {
  const v = new Float64Array(TOTAL / 8);
  let s = 12345;
  for (let i = 0; i < v.length; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    v[i] = (s / 2 ** 32) * 1e6 - 5e5;
  }
  return new Uint8Array(v.buffer);
}

/** Runs fn over every chunk with at most `inFlight` calls outstanding; returns results in chunk order. */
async function pool(n, inFlight, fn) {
  const out = new Array(n);
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return out;
}

/*
 * Each configuration is a runner whose once() times one full compress and one full decompress pass.
 * Repetitions are interleaved across configurations (native, wasm, C reference take turns) so they
 * share whatever load the machine has; each keeps its best pass.
 */

/**
 * CPU time of the whole process (every thread: the main thread, libuv's pool, wasm workers), which a busy
 * neighbour inflates much less than wall time. With one chunk in flight it is the per-thread cost.
 */
function cpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e3;
}

/** decodeBoxes' box list for one rank-1 chunk of float64 copied whole: src start, dst start, count. */
const WHOLE_CHUNK = Int32Array.of(0, 0, CHUNK / 8);
const SHAPE = Int32Array.of(CHUNK / 8);

/** The batch column's boxes: chunk i of the dataset, whole, at its place in one dataset-sized buffer. */
const DATA_SHAPE = Int32Array.of(TOTAL / 8);
const BATCH_BOXES = Int32Array.from({ length: (3 * TOTAL) / CHUNK }, (_, k) =>
  k % 3 === 0 ? 0 : k % 3 === 1 ? (Math.floor(k / 3) * CHUNK) / 8 : CHUNK / 8,
);

function nodeRunner(data, profile, backend, inFlight, batch = false) {
  const spec = profileCodec(profile, "float64");
  const chunks = Array.from({ length: TOTAL / CHUNK }, (_, i) => data.subarray(i * CHUNK, (i + 1) * CHUNK));
  // Outputs the caller holds, made once and reused by every pass (as c-blosc's side does).
  const lanes = Array.from({ length: inFlight }, () => new Uint8Array(CHUNK));
  const whole = batch ? new Uint8Array(data.length) : undefined;
  return {
    async once() {
      setCodecBackend(backend);
      const u0 = cpuMs();
      const t0 = performance.now();
      const frames = await pool(chunks.length, inFlight, (i) => encode(spec, chunks[i]));
      const t1 = performance.now();
      const u1 = cpuMs();
      await pool(chunks.length, inFlight, (i) => decode(spec, frames[i], CHUNK));
      const t2 = performance.now();
      const u2 = cpuMs();
      // Into memory the caller holds (one buffer per lane), so no fresh result buffer feeds V8's
      // external-memory accounting and its collections.
      let lane = 0;
      await pool(chunks.length, inFlight, async (i) => {
        const out = lanes[lane++ % inFlight];
        await decodeBoxes(spec, [frames[i]], SHAPE, 8, out, SHAPE, WHOLE_CHUNK);
      });
      const t3 = performance.now();
      const u3 = cpuMs();
      // How the reader decodes a shard: every frame into its place in one array, one call.
      if (whole) await decodeBoxes(spec, frames, SHAPE, 8, whole, DATA_SHAPE, BATCH_BOXES);
      const t4 = performance.now();
      const u4 = cpuMs();
      if (whole && Buffer.compare(whole, data) !== 0) throw new Error(`${backend}/${profile}: batch differs`);
      const back = await decode(spec, frames[3], CHUNK); // timed decodes are length-checked; check bytes once
      if (Buffer.compare(back, chunks[3]) !== 0) throw new Error(`${backend}/${profile}: round trip differs`);
      const into = new Uint8Array(CHUNK);
      await decodeBoxes(spec, [frames[3]], SHAPE, 8, into, SHAPE, WHOLE_CHUNK);
      if (Buffer.compare(into, chunks[3]) !== 0)
        throw new Error(`${backend}/${profile}: decode-into differs`);
      return {
        cMs: t1 - t0,
        dMs: t2 - t1,
        iMs: t3 - t2,
        bMs: whole ? t4 - t3 : Infinity,
        cCpu: u1 - u0,
        dCpu: u2 - u1,
        iCpu: u3 - u2,
        bCpu: whole ? u4 - u3 : Infinity,
        size: frames.reduce((a, f) => a + f.length, 0),
      };
    },
    close() {},
  };
}

async function wasmWorkersRunner(data, profile) {
  const shared = new SharedArrayBuffer(TOTAL);
  new Uint8Array(shared).set(data);
  const half = TOTAL / CHUNK / 2;
  const workers = [0, 1].map(
    (k) =>
      new Worker(new URL(import.meta.url), { workerData: { shared, first: k * half, count: half, profile } }),
  );
  const next = (w) => new Promise((resolve) => w.once("message", resolve));
  await Promise.all(workers.map(next)); // "ready"
  const phase = async (name) => {
    const t0 = performance.now();
    const sizes = await Promise.all(
      workers.map((w) => {
        const done = next(w);
        w.postMessage(name);
        return done;
      }),
    );
    return { ms: performance.now() - t0, size: sizes[0] + sizes[1] };
  };
  return {
    async once() {
      const c = await phase("compress");
      const d = await phase("decompress");
      return { cMs: c.ms, dMs: d.ms, size: c.size };
    },
    close: () => Promise.all(workers.map((w) => w.terminate())),
  };
}

/**
 * Native in a child process whose libuv pool has `threads` threads: the batch column splits a call's
 * frames over the pool, so the pool's size is what "threads" means there. Each process makes a warm-up
 * call per pool thread (zstd contexts are per thread), then PASSES_PER_PROCESS passes.
 */
/**
 * Passes each child process (native, c-blosc) runs, reporting its best. The first ones pay the cold
 * start: on our side the JIT, the result pool's first blocks (page faults) and V8's first collections
 * (a decode-only process settles after about three passes of 16 MiB); c-blosc gets the same passes.
 */
const PASSES_PER_PROCESS = 4;

function nativeRunner(file, profile, threads) {
  return {
    async once() {
      const r = spawnSync(
        process.execPath,
        [fileURLToPath(import.meta.url), "--native-pass", file, profile, String(threads)],
        {
          encoding: "utf8",
          env: { ...process.env, UV_THREADPOOL_SIZE: String(threads) },
          maxBuffer: 1 << 20,
        },
      );
      if (r.status !== 0) throw new Error(`native pass exited with ${r.status}: ${r.stderr}`);
      return JSON.parse(r.stdout);
    },
    close() {},
  };
}

if (isMainThread && process.argv[2] === "--native-pass") {
  const [file, profile, threads] = process.argv.slice(3);
  const data = new Uint8Array(readFileSync(file));
  const spec = profileCodec(profile, "float64");
  setCodecBackend("native");
  const warm = data.subarray(0, CHUNK);
  await Promise.all(
    Array.from({ length: Number(threads) }, async () => decode(spec, await encode(spec, warm), CHUNK)),
  );
  const runner = nodeRunner(data, profile, "native", Number(threads), true);
  const passes = [];
  for (let k = 0; k < PASSES_PER_PROCESS; k++) passes.push(await runner.once());
  const t = Object.fromEntries(
    Object.keys(passes[0]).map((col) => [col, Math.min(...passes.map((p) => p[col]))]),
  );
  process.stdout.write(JSON.stringify(t));
  process.exit(0);
}

const PYTHON = join(here, "..", "..", "..", ".venv", "bin", "python");

/** numcodecs' c-blosc in the repository's venv, with `threads` c-blosc threads. */
function cbloscRunner(file, profile, threads) {
  return {
    async once() {
      const r = spawnSync(
        PYTHON,
        [
          join(here, "cblosc_bench.py"),
          file,
          String(CHUNK),
          "8",
          profile,
          String(threads),
          String(PASSES_PER_PROCESS),
        ],
        { encoding: "utf8" },
      );
      if (r.status !== 0) throw new Error(`cblosc_bench.py exited with ${r.status}: ${r.stderr}`);
      const [c, d, size, i, b, cCpu, dCpu, iCpu, bCpu] = r.stdout.trim().split(" ").map(Number);
      const ms = (mbps) => TOTAL / mbps / 1e3;
      const mib = TOTAL / 2 ** 20;
      return {
        cMs: ms(c),
        dMs: ms(d),
        iMs: ms(i),
        bMs: ms(b),
        size,
        cCpu: cCpu * mib,
        dCpu: dCpu * mib,
        iCpu: iCpu * mib,
        bCpu: bCpu * mib,
      };
    },
    close() {},
  };
}

if (!isMainThread) await new Promise(() => {}); // a worker only serves wasmWorkersRunner

const fmt = (x) => x.toFixed(0).padStart(7);
const opt = (x) => (Number.isFinite(x) && x > 0 ? fmt(x) : "      -");
const rows = [];
const work = mkdtempSync(join(tmpdir(), "zs-bench-"));
const haveCblosc = existsSync(PYTHON);
console.log(
  `codecs bench: ${TOTAL >> 20} MiB float64 per dataset, ${CHUNK >> 20} MiB chunks, best of ${REPS},`,
);
console.log(
  "native: a child process per pass with UV_THREADPOOL_SIZE = threads; MB/s = 10^6 bytes of raw data per second",
);
if (!haveCblosc) console.log(`(no c-blosc limit line: ${PYTHON} is missing; run scripts/setup-python.sh)`);
else console.log("c-blosc: numcodecs' build (Python venv), c-blosc threads = the threads column");
console.log("\ndataset  profile     backend    threads  compress  decompress  into-buffer    batch  ratio");
for (const [name, make] of [
  ["smooth", smooth],
  ["random", random],
]) {
  const data = make();
  const file = join(work, `${name}.bin`);
  writeFileSync(file, data);
  for (const profile of PROFILES) {
    const configs = [
      ["native", 1, nativeRunner(file, profile, 1)],
      ["native", 2, nativeRunner(file, profile, 2)],
      ["wasm", 1, nodeRunner(data, profile, "wasm", 1)],
      ["wasm", 2, nodeRunner(data, profile, "wasm", 2)],
      ["numcodecs", 1, nodeRunner(data, profile, "numcodecs", 1)],
      ["numcodecs", 2, await wasmWorkersRunner(data, profile)],
      ...(haveCblosc
        ? [
            ["c-blosc", 1, cbloscRunner(file, profile, 1)],
            ["c-blosc", 2, cbloscRunner(file, profile, 2)],
          ]
        : []),
    ];
    const COLS = ["cMs", "dMs", "iMs", "bMs", "cCpu", "dCpu", "iCpu", "bCpu"];
    const best = configs.map(() => ({ ...Object.fromEntries(COLS.map((k) => [k, Infinity])), size: 0 }));
    for (let r = 0; r < REPS; r++) {
      for (const [i, [, , runner]] of configs.entries()) {
        const t = await runner.once();
        for (const k of COLS) best[i][k] = Math.min(best[i][k], t[k] ?? Infinity);
        best[i].size = t.size;
      }
    }
    for (const [i, [backend, threads, runner]] of configs.entries()) {
      await runner.close();
      const r = {
        c: TOTAL / best[i].cMs / 1e3,
        d: TOTAL / best[i].dMs / 1e3,
        di: TOTAL / best[i].iMs / 1e3,
        db: TOTAL / best[i].bMs / 1e3,
        ratio: TOTAL / best[i].size,
        cpu: ["cCpu", "dCpu", "iCpu", "bCpu"].map((k) => best[i][k] / (TOTAL / 2 ** 20)),
        cpuC: TOTAL / best[i].cCpu / 1e3,
        cpuD: TOTAL / best[i].dCpu / 1e3,
        cpuI: TOTAL / best[i].iCpu / 1e3,
      };
      rows.push({ name, profile, backend, threads, ...r });
      console.log(
        `${name.padEnd(8)} ${profile.padEnd(11)} ${backend.padEnd(10)} ${String(threads).padStart(7)}  ` +
          `${fmt(r.c)}   ${fmt(r.d)}   ${opt(r.di)}      ${opt(r.db)}  ${r.ratio.toFixed(2).padStart(5)}`,
      );
    }
  }
}
rmSync(work, { recursive: true, force: true });

// CPU time resists a busy machine better than wall time: a neighbour slows our clock but adds little to
// our CPU seconds. Lower is better.
console.log("\nCPU ms per MiB (user + system, every thread of the process; best pass):");
console.log("dataset  profile     backend    threads  compress  decompress  into-buffer    batch");
const ms3 = (v) => (Number.isFinite(v) ? v.toFixed(3).padStart(7) : "      -");
for (const r of rows.filter((r) => r.backend === "native" || r.backend === "c-blosc")) {
  console.log(
    `${r.name.padEnd(8)} ${r.profile.padEnd(11)} ${r.backend.padEnd(10)} ${String(r.threads).padStart(7)}  ` +
      `${ms3(r.cpu[0])}   ${ms3(r.cpu[1])}      ${ms3(r.cpu[2])}  ${ms3(r.cpu[3])}`,
  );
}

const row = (name, profile, backend, threads) =>
  rows.find(
    (r) => r.name === name && r.profile === profile && r.backend === backend && r.threads === threads,
  );
const x = (a, b) => `${(a / b).toFixed(2)}x`;
console.log("\ntargets, per profile and dataset:");
for (const name of ["smooth", "random"]) {
  for (const profile of PROFILES) {
    const at = (backend, threads) => row(name, profile, backend, threads);
    const lines = [];
    for (const t of [1, 2]) {
      const n = at("native", t);
      const c = at("c-blosc", t);
      const w = at("wasm", t);
      const nc = at("numcodecs", t);
      if (n && c)
        lines.push(
          `native/c-blosc ${t}T: compress ${x(n.c, c.c)} decompress ${x(n.d, c.d)}, into a held buffer ` +
            `${x(n.di, c.di)}, batch ${x(n.db, c.db)} (≥1.00x); CPU per MiB, c-blosc/native: ` +
            `${n.cpu.map((v, k) => x(c.cpu[k], v)).join(" ")}; ` +
            `size ${((c.ratio / n.ratio - 1) * 100).toFixed(2)}% (at most +1%)`,
        );
      if (w && n) lines.push(`wasm/native ${t}T: compress ${x(w.c, n.c)} decompress ${x(w.d, n.d)} (≥0.50x)`);
      if (w && nc)
        lines.push(`wasm/numcodecs ${t}T: compress ${x(w.c, nc.c)} decompress ${x(w.d, nc.d)} (≥3.00x)`);
    }
    for (const l of lines) console.log(`  ${name} ${profile}: ${l}`);
  }
}

// The same per-thread comparisons on CPU time (one chunk in flight), for runs on a loaded machine: once
// with decode's fresh result per chunk (d), once decoding into a buffer the caller holds (i), which is
// how the reader decodes; wasm's fresh result is made in a worker and transferred, a cost of its own.
for (const [label, key] of [
  ["d = decode, a fresh result per chunk", "cpuD"],
  ["i = decodeBoxes into a held buffer", "cpuI"],
]) {
  const k = key.at(-1).toLowerCase();
  console.log(`\nper thread on CPU time (1 chunk in flight, MB/s of process CPU time; ${label}):`);
  console.log(
    `dataset  profile     native c/${k}     wasm c/${k}       numcodecs c/${k}   wasm/native c/${k}   wasm/numcodecs c/${k}`,
  );
  for (const name of ["smooth", "random"]) {
    for (const profile of PROFILES) {
      const [n, w, nc] = ["native", "wasm", "numcodecs"].map((b) => row(name, profile, b, 1));
      if (!n || !w || !nc) continue;
      const pair = (r) => `${fmt(r.cpuC)}/${fmt(r[key]).trim().padEnd(5)}`;
      console.log(
        `${name.padEnd(8)} ${profile.padEnd(11)} ${pair(n)} ${pair(w)} ${pair(nc)}  ` +
          `${x(w.cpuC, n.cpuC)}/${x(w[key], n[key])}       ${x(w.cpuC, nc.cpuC)}/${x(w[key], nc[key])}`,
      );
    }
  }
}

#!/usr/bin/env node
// Throughput of encode/decode per profile on 64 MiB of smooth and of random float64, native vs wasm, with
// 1 and 2 chunks in flight, next to the C libraries' own single-thread speed on the same bytes.
// Run: npm run bench -w packages/codecs (after `npx tsc -b packages/codecs`). BENCH_MIB=16 for a quick run.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { decode, encode, profileCodec, setCodecBackend } from "../dist/src/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const TOTAL = Number(process.env.BENCH_MIB ?? 64) << 20;
const CHUNK = 1 << 20;
const REPS = Number(process.env.BENCH_REPS ?? 2);
const PROFILES = (process.env.BENCH_PROFILES ?? "diagnostic,checkpoint,wasm").split(",");

// wasm runs on the thread that calls it, so "2 threads" for wasm means two worker threads, each
// encoding and decoding half of the chunks; the main thread times both phases.
if (!isMainThread) {
  const { shared, first, count, profile } = workerData;
  setCodecBackend("wasm");
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

function nodeRunner(data, profile, backend, inFlight) {
  const spec = profileCodec(profile, "float64");
  const chunks = Array.from({ length: TOTAL / CHUNK }, (_, i) => data.subarray(i * CHUNK, (i + 1) * CHUNK));
  return {
    async once() {
      setCodecBackend(backend);
      const t0 = performance.now();
      const frames = await pool(chunks.length, inFlight, (i) => encode(spec, chunks[i]));
      const t1 = performance.now();
      await pool(chunks.length, inFlight, (i) => decode(spec, frames[i], CHUNK));
      const t2 = performance.now();
      const back = await decode(spec, frames[3], CHUNK); // timed decodes are length-checked; check bytes once
      if (Buffer.compare(back, chunks[3]) !== 0) throw new Error(`${backend}/${profile}: round trip differs`);
      return { cMs: t1 - t0, dMs: t2 - t1, size: frames.reduce((a, f) => a + f.length, 0) };
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
 * The reference links the zstd the addon compiles in (scripts/build-native.mjs unpacks it to .zstd-src/)
 * when present, exported from the executable (-rdynamic) so the system libblosc binds to it as it does to
 * the addon's: then "native vs C" compares our glue with plain c-blosc, not two zstd versions. Otherwise
 * it links the system libzstd. Returns the executable and which zstd it carries.
 */
function compileReference(dir) {
  const exe = join(dir, "reference");
  const sources = join(here, "..", ".zstd-src");
  const version = existsSync(sources) ? readdirSync(sources)[0] : undefined;
  const lib = join(sources, version ?? "-", "lib");
  const vendored = existsSync(lib)
    ? ["common", "compress", "decompress"].flatMap((d) =>
        readdirSync(join(lib, d))
          .filter((f) => f.endsWith(".c") || f.endsWith(".S"))
          .map((f) => join(lib, d, f)),
      )
    : [];
  const zstd = vendored.length > 0 ? ["-rdynamic", `-I${lib}`, "-DZSTD_NO_TRACE", ...vendored] : ["-lzstd"];
  const cc = spawnSync("cc", ["-O2", "-o", exe, join(here, "reference.c"), ...zstd, "-lblosc"], {
    encoding: "utf8",
  });
  if (cc.status !== 0) return undefined;
  return { exe, zstd: vendored.length > 0 ? `zstd ${version} (the addon's)` : "the system libzstd" };
}

function referenceRunner(exe, file, profile) {
  return {
    async once() {
      const r = spawnSync(exe, [file, String(CHUNK), "8", profile, "1"], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`reference exited with ${r.status}`);
      const [c, d, size] = r.stdout.trim().split(" ").map(Number);
      return { cMs: TOTAL / c / 1e3, dMs: TOTAL / d / 1e3, size };
    },
    close() {},
  };
}

if (!isMainThread) await new Promise(() => {}); // a worker only serves wasmWorkersRunner

const fmt = (x) => x.toFixed(0).padStart(7);
const rows = [];
const work = mkdtempSync(join(tmpdir(), "zs-bench-"));
const ref = compileReference(work);
const refExe = ref?.exe;
console.log(
  `codecs bench: ${TOTAL >> 20} MiB float64 per dataset, ${CHUNK >> 20} MiB chunks, best of ${REPS},`,
);
console.log(
  `UV_THREADPOOL_SIZE=${process.env.UV_THREADPOOL_SIZE ?? "(default 4)"}, MB/s = 10^6 bytes of raw data per second`,
);
if (!ref) console.log("(C reference not compiled: cc, blosc.h or zstd.h missing)");
else console.log(`C reference: the system c-blosc with ${ref.zstd}`);
console.log("\ndataset  profile     backend    threads  compress  decompress  ratio");
for (const [name, make] of [
  ["smooth", smooth],
  ["random", random],
]) {
  const data = make();
  const file = join(work, `${name}.bin`);
  writeFileSync(file, data);
  for (const profile of PROFILES) {
    const configs = [
      ["native", 1, nodeRunner(data, profile, "native", 1)],
      ["native", 2, nodeRunner(data, profile, "native", 2)],
      ["wasm", 1, nodeRunner(data, profile, "wasm", 1)],
      ["wasm", 2, await wasmWorkersRunner(data, profile)],
      ...(refExe ? [["C ref", 1, referenceRunner(refExe, file, profile)]] : []),
    ];
    const best = configs.map(() => ({ cMs: Infinity, dMs: Infinity, size: 0 }));
    for (let r = 0; r < REPS; r++) {
      for (const [i, [, , runner]] of configs.entries()) {
        const t = await runner.once();
        best[i] = { cMs: Math.min(best[i].cMs, t.cMs), dMs: Math.min(best[i].dMs, t.dMs), size: t.size };
      }
    }
    for (const [i, [backend, threads, runner]] of configs.entries()) {
      await runner.close();
      const r = { c: TOTAL / best[i].cMs / 1e3, d: TOTAL / best[i].dMs / 1e3, ratio: TOTAL / best[i].size };
      rows.push({ name, profile, backend, threads, ...r });
      console.log(
        `${name.padEnd(8)} ${profile.padEnd(11)} ${backend.padEnd(10)} ${String(threads).padStart(7)}  ` +
          `${fmt(r.c)}   ${fmt(r.d)}     ${r.ratio.toFixed(2).padStart(5)}`,
      );
    }
  }
}
rmSync(work, { recursive: true, force: true });

const row = (name, profile, backend, threads) =>
  rows.find(
    (r) => r.name === name && r.profile === profile && r.backend === backend && r.threads === threads,
  );
console.log("\ntargets (native diagnostic):");
for (const name of ["smooth", "random"]) {
  const n1 = row(name, "diagnostic", "native", 1);
  const n2 = row(name, "diagnostic", "native", 2);
  const ref = row(name, "diagnostic", "C ref", 1);
  if (!n1 || !n2) continue;
  if (ref)
    console.log(
      `  ${name}: compress vs C reference ${((n1.c / ref.c - 1) * 100).toFixed(1)}% (target: within 15%)`,
    );
  console.log(
    `  ${name}: 2-thread scaling: compress ${(n2.c / n1.c).toFixed(2)}x, decompress ${(n2.d / n1.d).toFixed(2)}x ` +
      "(target: ≥1.7x)",
  );
}

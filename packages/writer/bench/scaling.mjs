#!/usr/bin/env node
// The scaling curves, each run in its own process by the harness: node scaling.mjs <curve> <params.json>
// Prints one JSON line.
import { rmSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { MANIFEST_KEY, readRecord } from "@zarr-stream/reader";
import { FsStore, MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { makePool, streamSchema } from "./workload.mjs";

const tinySchema = (n, timeMode) => ({
  dims: [
    ["time", 0],
    ["x", n],
  ],
  time_dim: "time",
  time_mode: timeMode,
  vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
  statics: [],
  chunk_shape: { time: 1, x: 1 },
  shard_shape: { time: 8, x: 1 },
  profile: "diagnostic",
});

/** Owner commit time with n writers (simulated in one process), one record each; best of `reps` rounds. */
async function commitVsWriters({ writers, reps }) {
  const out = [];
  for (const n of writers) {
    const store = new MemoryStore();
    const ws = [
      await ZarrStreamWriter.create(
        store,
        tinySchema(n, "append"),
        { kind: "owner", nWriters: n },
        { x: [0, 1] },
      ),
    ];
    for (let i = 1; i < n; i++)
      ws.push(await ZarrStreamWriter.join(store, { kind: "contributor", id: i }, { x: [i, i + 1] }));
    let best = Number.POSITIVE_INFINITY;
    let tokenBytes = 0;
    for (let r = 0; r < reps; r++) {
      for (const w of ws) await w.writeRecord(r, { v: Float32Array.of(r + 1) });
      const tokens = [];
      for (const w of ws) tokens.push(await w.flush());
      tokenBytes = tokens.reduce((s, t) => s + JSON.stringify(t).length, 0);
      const t0 = performance.now();
      await ws[0].commit(tokens);
      best = Math.min(best, performance.now() - t0);
    }
    out.push({ writers: n, commit_ms: best, token_bytes: tokenBytes });
  }
  return out;
}

const MANIFEST_PAGES = ".zarr-stream/manifest/";

/** A MemoryStore that counts the bytes put to the manifest and its pages. */
class ManifestCountingStore extends MemoryStore {
  manifestBytesPut = 0;
  async putIfVersion(key, bytes, expected) {
    if (key === MANIFEST_KEY || key.startsWith(MANIFEST_PAGES)) this.manifestBytesPut += bytes.byteLength;
    return super.putIfVersion(key, bytes, expected);
  }
}

const best = (xs) => Math.min(...xs);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * `reps` one-record commits at the store's current size: manifest + page bytes put by each (largest),
 * wall time (best) and CPU time (median) of each, and a one-record read straight after each, as a reader
 * following a live run makes it (best: the first read that meets a new manifest); then the best of three
 * reads straight after the last commit.
 */
async function measureCommits(store, reps, commitOne, readOne) {
  const bytes = [];
  const wall = [];
  const cpu = [];
  const firstReads = [];
  for (let k = 0; k < reps; k++) {
    store.manifestBytesPut = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await commitOne(k);
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    bytes.push(store.manifestBytesPut);
    if (k === reps - 1) break;
    const r0 = performance.now();
    await readOne();
    firstReads.push(performance.now() - r0);
  }
  const reads = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await readOne();
    reads.push(performance.now() - t0);
  }
  firstReads.push(reads[0]);
  return {
    manifest_bytes: (await store.get(MANIFEST_KEY))?.byteLength ?? 0,
    commit_bytes: Math.max(...bytes),
    commit_ms: best(wall),
    commit_cpu_ms: median(cpu),
    read_record_ms: best(reads),
    first_read_ms: best(firstReads),
  };
}

/**
 * The manifest's cost as records accumulate, through the real writer on a MemoryStore (v2: an owner in
 * append mode, a Single writer in indexed mode), in both forms (docs/manifest-pages.md): `append` and
 * `indexed` are the paged form, `seed` the seed's (the default), whose whole manifest every commit
 * rewrites. Per point: stored manifest size, manifest + page bytes written by a one-record commit, that
 * commit's time, and a one-record read. Append grows one store through every checkpoint; indexed makes
 * one store per checkpoint, its time axis that long, committed in order but for `reps` records mid-axis,
 * which are then committed one at a time.
 */
async function manifestVsRecords({ checkpoints, commitEvery, reps = 5 }) {
  // A pass at the smallest size first, discarded: the first read at the smallest size must not be the
  // process's first read, whose time is mostly compiling the read path.
  await manifestCurves({ checkpoints: checkpoints.slice(0, 1), commitEvery, reps, paged: true });
  const paged = await manifestCurves({ checkpoints, commitEvery, reps, paged: true });
  // The seed's form rewrites the whole manifest (10 MB at 10^5 indexed records) at every commit, so its
  // stores are built with fewer commits; only the measured one-record commits are timed.
  const seed = await manifestCurves({
    checkpoints,
    commitEvery: Math.max(commitEvery, 10_000),
    reps,
    paged: false,
  });
  return { ...paged, seed };
}

async function manifestCurves({ checkpoints, commitEvery, reps, paged }) {
  const one = new Float32Array(1);
  const opts = { manifestPages: paged };
  const append = [];
  {
    const store = new ManifestCountingStore();
    const owner = { kind: "owner", nWriters: 1 };
    const w = await ZarrStreamWriter.create(store, tinySchema(1, "append"), owner, {}, opts);
    const commit = async () => w.commit([await w.flush()]);
    let r = 0;
    for (const n of checkpoints) {
      for (; r < n; r++) {
        one[0] = r;
        await w.writeRecord(r, { v: one });
        if ((r + 1) % commitEvery === 0 || r + 1 === n) await commit();
      }
      const at = r;
      const point = await measureCommits(
        store,
        reps,
        async () => {
          one[0] = r;
          await w.writeRecord(r, { v: one });
          r++;
          await commit();
        },
        () => readRecord(store, "v", at - 1),
      );
      append.push({ records: at, ...point });
    }
  }
  const indexed = [];
  for (const n of checkpoints) {
    const store = new ManifestCountingStore();
    const times = Array.from({ length: n }, (_, i) => i);
    const w = await ZarrStreamWriter.create(
      store,
      tinySchema(1, { indexed: { times } }),
      { kind: "single" },
      {},
      opts,
    );
    // The measured records sit mid-axis, so each of their commits rewrites a full page.
    const gap = Math.min(reps, n);
    const from = Math.floor((n - gap) / 2);
    for (let r = 0; r < n; r++) {
      if (r >= from && r < from + gap) continue;
      one[0] = r;
      await w.writeRecordAt(r, r, { v: one });
      if ((r + 1) % commitEvery === 0 || r + 1 === n) await w.flush();
    }
    const point = await measureCommits(
      store,
      gap,
      async (k) => {
        one[0] = from + k;
        await w.writeRecordAt(from + k, from + k, { v: one });
        await w.flush();
      },
      () => readRecord(store, "v", 0),
    );
    indexed.push({ records: n, ...point });
  }
  return { append, indexed };
}

/**
 * Peak and current RSS while one Single writer writes `records` records of the workload (on its own small
 * grid), appending or (indexed) at their index on a time axis as long as the last checkpoint, and the
 * latency of reading one record's region back as the store grows.
 */
async function rssAndReadVsRecords({ workload: wl, checkpoints, dir, indexed = false }) {
  rmSync(dir, { recursive: true, force: true });
  const pool = makePool(wl);
  const store = new FsStore(dir);
  const last = checkpoints[checkpoints.length - 1];
  const schema = indexed
    ? { ...streamSchema(wl), time_mode: { indexed: { times: Array.from({ length: last }, (_, r) => r) } } }
    : streamSchema(wl);
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
  const mb = (x) => x / 2 ** 20;
  const rss = [];
  const read = [];
  const baseline = mb(process.memoryUsage().rss);
  const max = checkpoints[checkpoints.length - 1];
  for (let r = 0; r < max; r++) {
    const rec = {};
    wl.vars.forEach((v, k) => {
      rec[v.name] = pool[k][r % wl.pool];
    });
    if (indexed) await w.writeRecordAt(r, r, rec);
    else await w.writeRecord(r, rec);
    if ((r + 1) % wl.commit_every === 0) await w.flush();
    if (checkpoints.includes(r + 1)) {
      await w.flush();
      rss.push({
        records: r + 1,
        rss_MB: mb(process.memoryUsage().rss),
        peak_rss_MB: process.resourceUsage().maxRSS / 1024,
      });
      let best = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        await readRecord(new FsStore(dir), wl.vars[0].name, r, {
          lat: [0, wl.chunk[1]],
          lon: [0, wl.chunk[2]],
        });
        best = Math.min(best, performance.now() - t0);
      }
      read.push({ records: r + 1, read_record_ms: best });
      // Taken after the RSS sample and the reads: the heap a full collection keeps tells per-record state
      // (it grows) from a V8 heap that is only sized up (RSS grows, this stays).
      collectGarbage();
      rss[rss.length - 1].heap_after_gc_MB = mb(process.memoryUsage().heapUsed);
    }
  }
  await w.close();
  rmSync(dir, { recursive: true, force: true });
  return { baseline_rss_MB: baseline, rss, read };
}

/** A full garbage collection, without needing --expose-gc on the command line. */
function collectGarbage() {
  setFlagsFromString("--expose-gc");
  runInNewContext("gc")();
}

const curves = { commitVsWriters, manifestVsRecords, rssAndReadVsRecords };
const [curve, params] = process.argv.slice(2);
const fn = curves[curve];
if (!fn) throw new Error(`unknown curve ${curve}`);
process.stdout.write(`${JSON.stringify(await fn(JSON.parse(params)))}\n`);

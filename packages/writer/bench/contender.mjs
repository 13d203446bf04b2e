#!/usr/bin/env node
// One zarr-stream contender run in its own process (so maxRSS is its own).
// Usage: contender.mjs <mode: single|regions4|procs4-owner|procs4-contributor|encode-only> <workload.json>
//   <store-dir> [id]
// Prints one JSON result line on stdout (procs4-*: see multiProcess below). ZSTREAM_CODECS picks the backend.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { codecBackend, decodeBoxes, encodeInto, maxEncodedLength, profileCodec } from "@zarr-stream/codecs";
import { fileIoBackend } from "@zarr-stream/fileio";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { timedPasses } from "./read-all.mjs";
import { recordBoxReader } from "./record-box.mjs";
import { storeBytes, warmPageCache } from "./store-files.mjs";
import { itemSize, makePool, streamSchema, totalBytes } from "./workload.mjs";
import { recordFor, writeSingle } from "./write-single.mjs";

const MB = 1e6;
const maxRssMB = () => process.resourceUsage().maxRSS / 1024;
const rssMB = () => process.memoryUsage().rss / 2 ** 20;

/** The lat band [a, b) of each of n writers, shard-aligned (n must divide the shard rows). */
function bands(wl, n) {
  const rows = wl.lat / wl.shard[1];
  if (rows % n !== 0) throw new Error(`${n} writers cannot split ${rows} shard rows evenly`);
  const per = (rows / n) * wl.shard[1];
  return Array.from({ length: n }, (_, i) => [i * per, (i + 1) * per]);
}

/** Owner plus three contributors in one process, each writing its lat band; the owner commits every round. */
async function writeRegions(wl, pool, store, n) {
  const b = bands(wl, n);
  const schema = streamSchema(wl);
  const writers = [
    await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: n }, { lat: b[0] }),
  ];
  for (let i = 1; i < n; i++)
    writers.push(await ZarrStreamWriter.join(store, { kind: "contributor", id: i }, { lat: b[i] }));
  for (let r = 0; r < wl.records; r++) {
    await Promise.all(writers.map((w, i) => w.writeRecord(3600 * r, recordFor(wl, pool, r, b[i]))));
    if ((r + 1) % wl.commit_every === 0 || r + 1 === wl.records) {
      const tokens = await Promise.all(writers.map((w) => w.flush()));
      await writers[0].commit(tokens);
    }
  }
  // The owner's close commits once more and needs every writer's (now empty) token.
  const last = await Promise.all(writers.slice(1).map((w) => w.flush()));
  for (const w of writers.slice(1)) await w.close();
  await writers[0].close(last);
}

function dropCaches() {
  try {
    execFileSync("sync");
    writeFileSync("/proc/sys/vm/drop_caches", "3\n");
    return true;
  } catch {
    return false;
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * Reads back: one record's region (checked against the generator), cold and warm, then everything. As a
 * user would, it keeps one store handle (whose parsed manifest and zarr.json are revalidated by version on
 * each read) and reads into buffers it owns (`out`), so neither loop allocates a result per read.
 */
async function readBack(wl, pool, dir) {
  const store = new FsStore(dir);
  // Each readRecord revalidates the manifest and its zarr.json by version, the two checks overlapping.
  const readOne = recordBoxReader(store, wl, pool);
  await readOne.checked();
  // One read after a dropped page cache varies by a third from one try to the next: the median of
  // cold_reps tries, as bench_peers.py takes for the peers.
  let cold = null;
  const colds = [];
  for (let i = 0; wl.cold && i < (wl.cold_reps ?? 1) && dropCaches(); i++) {
    const t = performance.now();
    await readOne();
    colds.push(performance.now() - t);
  }
  if (colds.length > 0) cold = median(colds);
  let warm = Number.POSITIVE_INFINITY;
  for (let i = 0; i < wl.warm_reps; i++) {
    const t = performance.now();
    await readOne();
    warm = Math.min(warm, performance.now() - t);
  }
  // The read-all starts from the page cache as the peers' does. Theirs write through it, so without a
  // cold phase (which drops it for every contender) their stores are still there; ours goes around it
  // (O_DIRECT, writer-decisions.md 17), and read at once after the write it would come from disk while
  // theirs came from memory: on the matrix's cells that was most of the read-all gap.
  if (colds.length === 0) warmPageCache(dir);
  const passes = await readAllPasses(store, wl);
  return { read_record_ms: warm, read_record_cold_ms: cold, ...passes };
}

/**
 * The read-all pass, wl.read_all_passes times (default 1) as bench_peers.py's finish() times the peers':
 * read_all_MBps is the first pass, right after the write (a process's first read pays its warm-up: code
 * not yet optimised, result pages not yet touched), read_all_best_MBps the best pass (the steady speed).
 */
async function readAllPasses(store, wl) {
  const speeds = (await timedPasses(store, wl, wl.read_all_passes ?? 1)).map(
    (p) => totalBytes(wl) / MB / p.s,
  );
  return { read_all_MBps: speeds[0], read_all_best_MBps: Math.max(...speeds) };
}

/**
 * 4 OS processes. Each generates its records and opens the store (the owner creates it first), prints
 * "ready" and waits for "go" on stdin, so the clock starts with every writer set up. Contributors print
 * one token per line; the harness pipes those lines to the owner's stdin, and the owner commits each
 * round once it holds its own token and the round's others. The owner reports the elapsed time.
 */
async function multiProcess(role, wl, pool, dir, id, n) {
  const store = new FsStore(dir);
  const b = bands(wl, n);
  const queue = [];
  let wake;
  createInterface({ input: process.stdin }).on("line", (line) => {
    queue.push(line);
    wake?.();
  });
  const next = async () => {
    while (queue.length === 0)
      await new Promise((res) => {
        wake = res;
      });
    return queue.shift();
  };
  const w =
    role === "owner"
      ? await ZarrStreamWriter.create(store, streamSchema(wl), { kind: "owner", nWriters: n }, { lat: b[0] })
      : await ZarrStreamWriter.join(store, { kind: "contributor", id }, { lat: b[id] });
  process.stdout.write("ready\n");
  if ((await next()) !== "go") throw new Error("expected go");
  const t0 = performance.now();
  const early = new Map(); // writer id -> tokens received ahead of their round
  for (let r = 0; r < wl.records; r++) {
    await w.writeRecord(3600 * r, recordFor(wl, pool, r, b[id]));
    if ((r + 1) % wl.commit_every !== 0 && r + 1 !== wl.records) continue;
    const token = await w.flush();
    if (role === "contributor") process.stdout.write(`${JSON.stringify(token)}\n`);
    else {
      // A fast contributor may already have sent its next round's token: take one per writer, in order.
      const tokens = [token];
      for (let id = 1; id < n; id++) {
        while (!(early.get(id)?.length > 0)) {
          const t = JSON.parse(await next());
          early.set(t.writer, [...(early.get(t.writer) ?? []), t]);
        }
        tokens.push(early.get(id).shift());
      }
      await w.commit(tokens);
    }
  }
  // Everything is committed; the owner's close() would commit again and wait for tokens nobody sends.
  const out = { write_s: (performance.now() - t0) / 1000, peak_rss_MB: maxRssMB(), done: true };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}

/**
 * Our codec alone on the inner chunks the writer compresses (edge chunks whole, padded with the fill
 * value 0, as the writer and bench_peers.py's limit hold them), a record's chunks of a variable per
 * encodeInto call and the variables' calls side by side: what the writer's CPU is judged against, and
 * the frames' bytes that the c-blosc limit's compressed_bytes are judged against.
 */
async function encodeOnly(wl, pool) {
  const [ct, ch, cw] = wl.chunk;
  if (ct !== 1) throw new Error("encode-only takes chunks of time extent 1");
  const perVar = wl.vars.map((v, k) => {
    const spec = profileCodec(wl.profile, v.dtype);
    const records = pool[k].map((f) => {
      const chunks = [];
      for (let i = 0; i < wl.lat; i += ch)
        for (let j = 0; j < wl.lon; j += cw) {
          const c = new f.constructor(ch * cw);
          const rows = Math.min(ch, wl.lat - i);
          const cols = Math.min(cw, wl.lon - j);
          for (let y = 0; y < rows; y++)
            c.set(f.subarray((i + y) * wl.lon + j, (i + y) * wl.lon + j + cols), y * cw);
          chunks.push(new Uint8Array(c.buffer));
        }
      return chunks;
    });
    const bound = records[0].reduce((s, c) => s + maxEncodedLength(spec, c.length), 0);
    return { spec, records, out: new Uint8Array(bound), sizes: new Uint32Array(records[0].length) };
  });
  let compressed = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let r = 0; r < wl.records; r++) {
    const ends = await Promise.all(
      perVar.map((p) => encodeInto(p.spec, p.records[r % wl.pool], p.out, 0, p.sizes)),
    );
    for (const n of ends) compressed += n;
  }
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    backend: codecBackend(),
    encode_s: s,
    encode_MBps: totalBytes(wl) / MB / s,
    encode_cpu_s: (cpu.user + cpu.system) / 1e6,
    compressed_bytes: compressed,
    ...(await decodeOnly(wl, perVar)),
  };
}

/**
 * Our codec alone decoding the frames encodeOnly makes, each into its place in a record-sized result (one
 * decodeBoxes call per record of a variable, the variables' calls side by side, one result buffer per
 * variable as read-all.mjs keeps one per dtype): the floor under any read-all of ours, as encode-only is
 * under the write. A peer's read-all time over this time is the most any read of ours could lead by.
 */
async function decodeOnly(wl, perVar) {
  const [, ch, cw] = wl.chunk;
  const chunkShape = Int32Array.of(ch, cw);
  const targetShape = Int32Array.of(wl.lat, wl.lon);
  const boxes = [];
  for (let i = 0; i < wl.lat; i += ch)
    for (let j = 0; j < wl.lon; j += cw)
      boxes.push(0, 0, i, j, Math.min(ch, wl.lat - i), Math.min(cw, wl.lon - j));
  const boxList = Int32Array.from(boxes);
  // Each distinct record's frames, encoded untimed.
  const perVarFrames = await Promise.all(
    perVar.map(async (p, k) => {
      const frames = [];
      for (const chunks of p.records) {
        const out = new Uint8Array(p.out.length);
        const sizes = new Uint32Array(chunks.length);
        await encodeInto(p.spec, chunks, out, 0, sizes);
        const record = [];
        for (let i = 0, at = 0; i < sizes.length; at += sizes[i], i++)
          record.push(out.subarray(at, at + sizes[i]));
        frames.push(record);
      }
      const size = itemSize(wl.vars[k].dtype);
      return { spec: p.spec, frames, size, target: new Uint8Array(wl.lat * wl.lon * size) };
    }),
  );
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let r = 0; r < wl.records; r++) {
    await Promise.all(
      perVarFrames.map((v) =>
        decodeBoxes(v.spec, v.frames[r % wl.pool], chunkShape, v.size, v.target, targetShape, boxList),
      ),
    );
  }
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { decode_s: s, decode_MBps: totalBytes(wl) / MB / s, decode_cpu_s: (cpu.user + cpu.system) / 1e6 };
}

async function main() {
  const [mode, wlFile, dir, idArg] = process.argv.slice(2);
  const wl = JSON.parse(readFileSync(wlFile, "utf8"));
  const pool = makePool(wl);
  const baseline = rssMB();
  if (mode === "encode-only") {
    process.stdout.write(`${JSON.stringify(await encodeOnly(wl, pool))}\n`);
    return;
  }
  if (mode === "procs4-owner" || mode === "procs4-contributor") {
    if (mode === "procs4-owner") rmSync(dir, { recursive: true, force: true });
    await multiProcess(
      mode === "procs4-owner" ? "owner" : "contributor",
      wl,
      pool,
      dir,
      Number(idArg ?? 0),
      4,
    );
    return;
  }
  rmSync(dir, { recursive: true, force: true });
  const store = new FsStore(dir);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  if (mode === "single") await writeSingle(wl, pool, store);
  else if (mode === "regions4") await writeRegions(wl, pool, store, 4);
  else throw new Error(`unknown mode ${mode}`);
  const writeS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const writePeak = maxRssMB();
  const reads = await readBack(wl, pool, dir);
  const result = {
    backend: codecBackend(),
    direct_io:
      process.env.ZSTREAM_NATIVE_FS !== "0" &&
      fileIoBackend().backend === "native" &&
      process.platform === "linux",
    write_s: writeS,
    write_MBps: totalBytes(wl) / MB / writeS,
    write_cpu_s: (cpu.user + cpu.system) / 1e6,
    ...reads,
    peak_rss_MB: writePeak,
    baseline_rss_MB: baseline,
    peak_rss_with_reads_MB: maxRssMB(),
    store_bytes: storeBytes(dir),
    bytes_per_element: wl.vars.map((v) => itemSize(v.dtype)),
  };
  rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();

import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { Worker } from "node:worker_threads";
import { type CodecBackendName, codecBackend, codecFallbackNotice } from "@zarr-stream/codecs";
import { type CommitToken, ZarrStreamError } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { UsageError } from "../command-line.js";
import { formatBytes } from "../inspect.js";
import type { CliIo } from "../io.js";
import { plotStore } from "../plot/plot.js";
import { Progress } from "../progress.js";
import { formatTime } from "../time-units.js";
import { verifyStore } from "../verify.js";
import { recordTime } from "./field.js";
import { batches, type ToMain, type ToWriter, type WriterJob } from "./messages.js";
import { type DemoConfig, demoSchema, type Split, splitGrid } from "./plan.js";
import { readBack } from "./readback.js";

export interface DemoSummary {
  store: string;
  quicklook: string;
  writers: number;
  split: [number, number];
  records: number;
  commits: number;
  commit_seq: number;
  raw_bytes: number;
  data_bytes_on_disk: number;
  store_bytes: number;
  compression_ratio: number;
  /** Wall time of the whole write phase, thread start-up and store creation included. */
  write_seconds: number;
  /** From the moment every writer had joined to the last commit: the streaming itself. */
  stream_seconds: number;
  /** Raw bytes over stream_seconds, all writers together. */
  mb_per_s: number;
  readback_ok: boolean;
  mismatches: string[];
  verify_ok: boolean;
  /** The codecs' implementation every thread used: "native", "wasm" (our SIMD build) or "numcodecs". */
  codec_backend: CodecBackendName;
  /** Why it is not native and how to get native, or null on native. */
  codec_notice: string | null;
}

/**
 * Workers inherit the parent's execArgv; flags that only make sense for the main script (a string program
 * run with --eval and --input-type) make every worker fail at start, so they are left out.
 */
function workerExecArgv(): string[] {
  return process.execArgv.filter((a) => !a.startsWith("--input-type") && a !== "--eval" && a !== "-e");
}

/** A fresh directory for the store: the one asked for (absent or empty), else a new temp directory. */
async function storeDir(out: string | undefined): Promise<string> {
  if (out === undefined) return join(await mkdtemp(join(tmpdir(), "zstream-demo-")), "demo.zarr");
  const dir = resolve(out);
  const entries = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [];
    throw new UsageError(`--out ${out}: ${e.code ?? e.message}`);
  });
  if (entries.length > 0) throw new UsageError(`--out ${out} exists and is not empty: give a new directory`);
  return dir;
}

/** Every thread loads the codecs once and may warn the same way: pass each distinct line on once. */
const seenStderr = new Set<string>();

/**
 * Picks the codec backend here first, so its fallback notice (if any) is printed once, by this thread;
 * the writer threads reach the same choice and their copy of the line is dropped.
 */
function chooseCodecs(): { backend: CodecBackendName; notice: string | null } {
  const backend = codecBackend();
  const notice = codecFallbackNotice() ?? null;
  if (notice) seenStderr.add(`@zarr-stream/codecs: ${notice}`);
  return { backend, notice };
}
function forwardStderr(w: Worker): void {
  let partial = "";
  w.stderr.on("data", (chunk: Buffer) => {
    const lines = (partial + chunk.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (seenStderr.has(line)) continue;
      seenStderr.add(line);
      process.stderr.write(`${line}\n`);
    }
  });
}

/** Runs the writer threads: the owner creates, contributors join, the main thread relays tokens. */
function runWriters(
  cfg: DemoConfig,
  split: Split,
  dir: string,
  progress: Progress,
): Promise<{ commitSeq: number; commits: number; streamSeconds: number }> {
  const schema = demoSchema(cfg, split);
  const n = cfg.writers;
  const nBatches = batches(cfg.records, cfg.commitEvery).length;
  const workerUrl = new URL("./worker.js", import.meta.url);
  const workers: Worker[] = [];
  const tokens = new Map<number, CommitToken[]>();
  let commitSeq = 0;
  let commits = 0;
  let done = 0;
  let ready = 0;
  let streamStart = 0;
  return new Promise((resolvePromise, reject) => {
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      for (const w of workers) void w.terminate();
      reject(err);
    };
    const spawn = (writer: number) => {
      const job: WriterJob = {
        storeDir: dir,
        role: writer === 0 ? { kind: "owner", nWriters: n } : { kind: "contributor", id: writer },
        region: split.regions[writer]!,
        grid: cfg.grid,
        records: cfg.records,
        commitEvery: cfg.commitEvery,
        writer,
        ...(writer === 0 ? { schema, manifestPages: cfg.manifestPages === true } : {}),
      };
      const w = new Worker(workerUrl, { workerData: job, stderr: true, execArgv: workerExecArgv() });
      workers[writer] = w;
      forwardStderr(w);
      w.on("error", (e) => fail(e));
      w.on("message", (m: ToMain) => {
        switch (m.type) {
          case "ready":
            // contributors join only once the owner has created the store (the protocol's barrier)
            if (writer === 0) for (let c = 1; c < n; c++) spawn(c);
            if (++ready === n) streamStart = performance.now();
            break;
          case "record":
            progress.tick(1, `commit_seq ${commitSeq}`);
            break;
          case "token": {
            const list = tokens.get(m.batch) ?? [];
            list.push(m.token);
            tokens.set(m.batch, list);
            if (list.length === n - 1) {
              tokens.delete(m.batch);
              workers[0]!.postMessage({ type: "tokens", batch: m.batch, tokens: list } satisfies ToWriter);
            }
            break;
          }
          case "committed":
            commitSeq = m.commit_seq;
            commits++;
            progress.note(
              `commit ${commits}/${nBatches}: ${m.n_committed} records committed (commit_seq ${m.commit_seq})`,
            );
            break;
          case "done":
            void w.terminate();
            if (++done === n)
              resolvePromise({ commitSeq, commits, streamSeconds: (performance.now() - streamStart) / 1000 });
            break;
          case "error": {
            const err = new ZarrStreamError(`writer ${m.writer}: ${m.name}: ${m.message}`);
            if (m.stack) err.stack = m.stack;
            fail(err);
            break;
          }
        }
      });
    };
    spawn(0);
  });
}

async function sizeUnder(store: FsStore, prefixes: string[]): Promise<number> {
  let total = 0;
  for (const p of prefixes) for (const k of await store.list(p)) total += (await store.size(k)) ?? 0;
  return total;
}

const CODEC_LABEL: Record<CodecBackendName, string> = {
  native: "native (our Blosc + zstd, Node-API addon)",
  wasm: "wasm (our Blosc + zstd, SIMD wasm on worker threads)",
  numcodecs: "numcodecs (c-blosc compiled to wasm, one thread)",
};

/** `zstream demo`: write, read back, verify, plot; returns the summary it printed. */
export async function runDemo(
  cfg: Omit<DemoConfig, "out"> & { out?: string },
  io: CliIo,
): Promise<DemoSummary> {
  const split = splitGrid(cfg.grid, cfg.writers);
  const dir = await storeDir(cfg.out);
  const codecs = chooseCodecs();
  const full: DemoConfig = { ...cfg, out: dir };
  const { nLat, nLon } = cfg.grid;
  io.stderr.write(
    `zstream demo: ${cfg.writers} writer thread(s) on a ${split.nLat} x ${split.nLon} lat x lon split of a ${nLat} x ${nLon} grid, ` +
      `${cfg.records} hourly records, commit every ${cfg.commitEvery}, profile ${cfg.profile}\n`,
  );
  const progress = new Progress(io.stderr, "writing", cfg.records * cfg.writers);
  const t0 = performance.now();
  const { commitSeq, commits, streamSeconds } = await runWriters(full, split, dir, progress);
  const seconds = (performance.now() - t0) / 1000;
  progress.finish();

  const store = new FsStore(dir);
  const back = await readBack(store, cfg.grid, split, cfg.records, cfg.commitEvery);
  const verified = await verifyStore(store);
  const quicklook = join(dirname(dir), `${basename(dir).replace(/\.zarr$/, "")}-temperature.png`);
  const plot = await plotStore(store, { variable: "temperature", record: cfg.records - 1 });
  await writeFile(quicklook, plot.png);

  const raw = cfg.records * nLat * nLon * 4 + nLat * nLon;
  const onDisk = await sizeUnder(store, ["temperature/", "land_mask/"]);
  const storeBytes = await sizeUnder(store, [""]);
  const summary: DemoSummary = {
    store: dir,
    quicklook,
    writers: cfg.writers,
    split: [split.nLat, split.nLon],
    records: back.records,
    commits,
    commit_seq: commitSeq,
    raw_bytes: raw,
    data_bytes_on_disk: onDisk,
    store_bytes: storeBytes,
    compression_ratio: raw / onDisk,
    write_seconds: seconds,
    stream_seconds: streamSeconds,
    mb_per_s: raw / 1e6 / streamSeconds,
    readback_ok: back.mismatches.length === 0,
    mismatches: back.mismatches,
    verify_ok: verified.ok,
    codec_backend: codecs.backend,
    codec_notice: codecs.notice,
  };
  const lastT = formatTime(recordTime(cfg.records - 1), "seconds since 2000-01-01 00:00:00").slice(4);
  const lines = [
    `store        ${dir}`,
    `records      ${back.records} committed by ${cfg.writers} writer${cfg.writers === 1 ? "" : "s"} in ${commits} commits (commit_seq ${commitSeq}), up to ${lastT}`,
    `written      ${formatBytes(raw)} raw -> ${formatBytes(onDisk)} on disk, compression ratio ${summary.compression_ratio.toFixed(2)}x (store total ${formatBytes(storeBytes)})`,
    `throughput   ${summary.mb_per_s.toPrecision(3)} MB/s raw across all writers (${streamSeconds.toFixed(2)} s streaming, ${seconds.toFixed(2)} s with thread start-up)`,
    `codecs       ${CODEC_LABEL[codecs.backend]}${codecs.notice ? " (slower fallback: see the notice above)" : ""}`,
    `read back    ${back.records} records, 1 static, ${back.blobs} blobs: ${summary.readback_ok ? "identical to what was written" : `${back.mismatches.length} MISMATCH(ES)`}`,
    ...back.mismatches.slice(0, 10).map((s) => `  ${s}`),
    `verify       ${verified.ok ? "OK" : "FAILED"} (${verified.checked.shards} shards, ${verified.checked.chunks} chunks)`,
    ...verified.problems.slice(0, 10).map((p) => `  ${p.key}: ${p.problem}`),
    `quicklook    ${quicklook}`,
    "",
    `next: npx zstream inspect ${dir}`,
    `      npx zstream plot ${dir} --var temperature --record 0 --out t0.png`,
  ];
  io.stdout.write(`${lines.join("\n")}\n`);
  return summary;
}

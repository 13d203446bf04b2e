// The S3 part of the benchmark: the bench's workload written and read through Versity's S3 gateway
// (versitygw, started on loopback as the test suites start it) by zarr-stream (S3Store), TensorStore (its
// s3 kvstore driver) and zarr-python (obstore's S3Store, with and without the zarrs codec pipeline), each
// in its own process and bucket, taking turns round by round (every other round in reverse order). The
// gateway's access log counts every request a contender makes, by phase (write, one-record read,
// read-all), which gives requests per commit and per shard read without a proxy in the data path.
//   node bench/bench.mjs --s3 small     (or full, quick; --rounds N, --only zarr-stream-s3,tensorstore-s3)
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { startS3Server } from "@zarr-stream/test-support/s3-server";
import { best, PYTHON } from "./harness.mjs";
import { defaultWorkload, quickWorkload, totalBytes } from "./workload.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const PEERS_S3 = join(here, "..", "..", "..", "python", "bench_peers_s3.py");

/**
 * zarr-stream-s3-sdk is zarr-stream with its reads and writes through the AWS SDK's GetObject and
 * PutObject (S3StoreOptions.sdkRequests), as every S3Store read and write went before the lean path: the
 * fix's before and after in one run.
 */
export const S3_CONTENDERS = [
  "zarr-stream-s3",
  "zarr-stream-s3-sdk",
  "tensorstore-s3",
  "zarr-python-s3",
  "zarr-python-zarrs-s3",
];

/**
 * The workloads of the S3 part: "full" is the bench's default (2.4 GB), "small" the same grid, shards and
 * chunks over 32 records (4 time shards, 0.8 GB: a few minutes for every contender and two rounds),
 * "quick" the bench:quick one. Cold reads mean nothing through a server's page cache: none are taken.
 */
export function s3Workload(size) {
  if (size === "quick") return { ...quickWorkload(), cold: false };
  if (size === "small")
    return { ...defaultWorkload(), records: 32, read_record: 20, cold: false, warm_reps: 3 };
  if (size === "full") return { ...defaultWorkload(), cold: false };
  throw new Error(`--s3 takes full, small or quick, got ${JSON.stringify(size)}`);
}

/**
 * One line of versitygw's access log (S3 server-access-log fields): bucket and operation. (Its bytes-sent
 * field reads 0 for every GetObject, so bytes are not counted.)
 */
const LOG_LINE = /^\S+ (\S+) \[[^\]]*\] \S+ \S+ \S+ (\S+) /;

/** Requests of `bucket` in the access log past line `from`: count, and count by operation. */
function countRequests(logFile, bucket, from) {
  const lines = readFileSync(logFile, "utf8").split("\n");
  const out = { requests: 0, by_op: {} };
  for (const line of lines.slice(from)) {
    const m = LOG_LINE.exec(line);
    if (m === null || m[1] !== bucket) continue;
    out.requests++;
    const op = m[2].replace(/^s3_/, "");
    out.by_op[op] = (out.by_op[op] ?? 0) + 1;
  }
  return { counts: out, next: lines.length - 1 };
}

/**
 * Runs one contender in its own process against `bucket`; at each `mark <phase>` line it counts the
 * requests made since the last mark (after a pause for the server to finish writing its log lines),
 * then lets the contender go on. Resolves with the contender's result plus `requests` by phase.
 */
function runContender(name, wlFile, server, bucket, logFile) {
  const ours = name.startsWith("zarr-stream-s3");
  const [cmd, args] = ours
    ? [process.execPath, [join(here, "s3-contender.mjs"), wlFile, server.endpoint, bucket]]
    : [PYTHON, [PEERS_S3, name, wlFile, server.endpoint, bucket]];
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, {
      env: {
        ...process.env,
        ...server.env,
        ZSTREAM_CODECS: "native",
        ZS_BENCH_S3_SDK: name === "zarr-stream-s3-sdk" ? "1" : "0",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    // Only this bucket's requests are counted, and only those after its creation.
    let from = readFileSync(logFile, "utf8").split("\n").length - 1;
    const requests = {};
    let last = "";
    let buf = "";
    let err = "";
    let pending = Promise.resolve();
    p.stdout.on("data", (d) => {
      buf += d;
      let i = buf.indexOf("\n");
      while (i >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        i = buf.indexOf("\n");
        if (!line.startsWith("mark ")) {
          if (line.trim() !== "") last = line;
          continue;
        }
        const phase = line.slice(5);
        pending = pending.then(async () => {
          await sleep(200);
          const { counts, next } = countRequests(logFile, bucket, from);
          from = next;
          requests[phase] = counts;
          p.stdin.write("go\n");
        });
      }
    });
    p.stderr.on("data", (d) => {
      err = (err + d).slice(-4000);
    });
    p.on("error", reject);
    p.on("close", async (code) => {
      await pending;
      if (code !== 0) return reject(new Error(`${name} exited ${code}: ${err.slice(-2000)}`));
      try {
        resolve({ ...JSON.parse(last), requests });
      } catch (e) {
        reject(new Error(`${name} printed no result (${e.message}): ${err.slice(-2000)}`));
      }
    });
  });
}

/**
 * Starts versitygw, runs every contender `rounds` times in turn (each measurement in a fresh bucket),
 * stops the server. Resolves with {workload, machine, contenders, ratios}; `json` also writes it.
 */
export async function runS3Bench(opts = {}) {
  const log = opts.log ?? ((s) => process.stderr.write(`${s}\n`));
  const wl = { ...s3Workload(opts.size ?? "small"), ...(opts.workload ?? {}) };
  const rounds = opts.rounds ?? 2;
  const workDir = opts.workDir ?? join(tmpdir(), `zs-bench-s3-${process.pid}`);
  mkdirSync(workDir, { recursive: true });
  const wlFile = join(workDir, "workload.json");
  writeFileSync(wlFile, JSON.stringify(wl));
  const logFile = join(workDir, "access.log");
  writeFileSync(logFile, "");
  // versitygw takes its access log and keep-alive switch from the environment, which the server inherits.
  // Its default closes every connection after one answer (no keep-alive), as the test suites run it.
  const saved = { log: process.env.VGW_ACCESS_LOG, alive: process.env.VGW_KEEP_ALIVE };
  process.env.VGW_ACCESS_LOG = logFile;
  if (opts.keepAlive) process.env.VGW_KEEP_ALIVE = "true";
  const server = await startS3Server("versitygw");
  for (const [k, v] of [
    ["VGW_ACCESS_LOG", saved.log],
    ["VGW_KEEP_ALIVE", saved.alive],
  ]) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const names = S3_CONTENDERS.filter((n) => !opts.only || opts.only.includes(n));
  const results = {};
  const errors = {};
  const commits = Math.ceil(wl.records / wl.commit_every);
  try {
    for (let round = 0; round < rounds; round++) {
      // Every other round runs the contenders in reverse: the first of a round ran behind in every run
      // we made at a high load, whichever it was (packages/spec/docs/s3-reads.md).
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const bucket = await server.makeBucket(`zsb-${name}-${round}`.replace(/[^a-z0-9-]/g, "-"));
        const load = loadavg()[0];
        try {
          const r = await runContender(name, wlFile, server, bucket, logFile);
          const q = r.requests;
          r.requests_per_commit = (q.written?.requests ?? Number.NaN) / commits;
          r.record_read_requests = q.warm ? q.warm.requests / wl.warm_reps : null;
          r.read_all_requests = q["read-all"]?.requests ?? null;
          r.load_avg = [Number(load.toFixed(2))];
          const prev = results[name];
          results[name] = best(prev, r);
          // Request counts do not change between rounds; keep the first round's breakdown.
          results[name].requests = prev?.requests ?? r.requests;
          log(
            `s3 round ${round + 1}/${rounds} ${name}: write ${r.write_MBps.toFixed(1)} MB/s, read-all ${r.read_all_MBps.toFixed(1)} MB/s, record ${r.read_record_ms.toFixed(1)} ms, ${r.requests_per_commit.toFixed(1)} req/commit, read-all ${r.read_all_requests} req (load ${load.toFixed(2)})`,
          );
        } catch (e) {
          errors[name] = e.message;
          log(`s3 round ${round + 1}/${rounds} ${name}: FAILED ${e.message.split("\n")[0]}`);
        }
      }
    }
  } finally {
    await server.stop();
  }
  const contenders = Object.fromEntries(
    names.map((n) => [n, results[n] ?? { error: errors[n] ?? "not run" }]),
  );
  const out = {
    workload: wl,
    total_bytes: totalBytes(wl),
    machine: { loadavg_end: loadavg(), node: process.version, rounds, keep_alive: opts.keepAlive === true },
    contenders,
    ratios: s3Ratios(contenders),
  };
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(out, null, 2)}\n`);
  return out;
}

/** zarr-stream's write and read-all over each peer's. */
function s3Ratios(contenders) {
  const zs = contenders["zarr-stream-s3"];
  const out = {};
  if (zs?.write_MBps === undefined) return out;
  for (const [n, c] of Object.entries(contenders)) {
    if (n === "zarr-stream-s3" || c.write_MBps === undefined) continue;
    out[n] = { write: zs.write_MBps / c.write_MBps, read_all: zs.read_all_MBps / c.read_all_MBps };
  }
  return out;
}

const f = (x, d = 1) => (typeof x === "number" && Number.isFinite(x) ? x.toFixed(d) : "-");

export function formatS3Report(out) {
  const { workload: wl, contenders, ratios, machine } = out;
  const lines = [
    `S3 (versitygw on loopback, keep-alive ${machine.keep_alive ? "on" : "off"}): ${wl.records} records x ${wl.vars.length} vars on ${wl.lat}x${wl.lon}, shard [${wl.shard}], chunk [${wl.chunk}], commit every ${wl.commit_every}; best of ${machine.rounds}`,
  ];
  const rows = [
    [
      "contender",
      "write MB/s",
      "read all MB/s",
      "rec ms",
      "req/commit",
      "req/record",
      "read-all req",
      "load",
    ],
  ];
  for (const [name, c] of Object.entries(contenders)) {
    if (c.error) {
      rows.push([name, "FAILED", "", "", "", "", "", ""]);
      continue;
    }
    rows.push([
      name,
      f(c.write_MBps),
      f(c.read_all_MBps),
      f(c.read_record_ms),
      f(c.requests_per_commit),
      f(c.record_read_requests),
      String(c.read_all_requests ?? "-"),
      (c.load_avg ?? []).join("/"),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  lines.push(...rows.map((r) => r.map((x, i) => String(x).padStart(widths[i])).join("  ")));
  for (const [n, r] of Object.entries(ratios)) {
    const ok = (x) => (x >= 1.5 ? "met" : "MISSED");
    lines.push(
      `  zarr-stream-s3 / ${n}: write ${f(r.write, 2)}x [${ok(r.write)} 1.5x], read-all ${f(r.read_all, 2)}x [${ok(r.read_all)} 1.5x]`,
    );
  }
  for (const [name, c] of Object.entries(contenders)) {
    if (c.error) lines.push(`${name}: ${c.error.split("\n")[0]}`);
    else
      lines.push(
        `${name} requests by phase: ${Object.entries(c.requests)
          .map(
            ([p, q]) =>
              `${p} ${q.requests} (${Object.entries(q.by_op)
                .map(([o, k]) => `${o} ${k}`)
                .join(", ")})`,
          )
          .join("; ")}`,
      );
  }
  return `${lines.join("\n")}\n`;
}

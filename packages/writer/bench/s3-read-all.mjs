#!/usr/bin/env node
// The read-all pass through S3 by zarr-stream and by TensorStore on one bucket, taking turns, each turn a
// process of its own (as record-reads.mjs does for local one-record reads): both read the same objects on
// the same server, so a machine whose speed drifts moves both alike. The store is written first, by
// zarr-stream, into a fresh bucket on a versitygw started here (VGW_KEEP_ALIVE=true in the environment
// turns the gateway's keep-alive on). zarr-stream-sdk is zarr-stream with its GETs through the AWS SDK
// (S3StoreOptions.sdkRequests) instead of the lean GET path: the fix's before and after in one run.
// zarr-stream-socket is the same S3Store with its shard reads on bare sockets that read straight into the
// reader's buffers (socket-gets.mjs): what the read costs below Node's HTTP clients.
// ZS_BENCH_EARLIER_STORE=<file> adds zarr-stream-earlier: the S3Store of another build of
// @zarr-stream/store (its dist/src/index.js, e.g. a copy of packages/store/dist taken before a change),
// reading in the same turns, so a change to the store is measured against what it replaces.
//   node bench/s3-read-all.mjs [small|full|quick] [pairs]
//   node bench/s3-read-all.mjs --ours WORKLOAD.json ENDPOINT BUCKET lean|sdk|socket|earlier  (one turn)
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { S3Store } from "@zarr-stream/store";
import { startS3Server } from "@zarr-stream/test-support/s3-server";
import { PYTHON } from "./harness.mjs";
import { readAll } from "./read-all.mjs";
import { lastJson, run } from "./run-process.mjs";
import { s3Workload } from "./s3.mjs";
import { withSocketGets } from "./socket-gets.mjs";
import { makePool, totalBytes } from "./workload.mjs";
import { writeSingle } from "./write-single.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const PEERS_S3 = join(here, "..", "..", "..", "python", "bench_peers_s3.py");

/** A turn's process, run to completion: its last line as JSON. */
const runTurn = (cmd, args, env) => run(cmd, args, env).then(lastJson);

const EARLIER = process.env.ZS_BENCH_EARLIER_STORE;

async function ours(wlFile, endpoint, bucket, path) {
  const wl = JSON.parse(readFileSync(wlFile, "utf8"));
  const Store = path === "earlier" ? (await import(pathToFileURL(resolve(EARLIER)).href)).S3Store : S3Store;
  const s3 = new Store({ bucket, endpoint, forcePathStyle: true, sdkRequests: path === "sdk" });
  const store = path === "socket" ? withSocketGets(s3, endpoint) : s3;
  const cpu = process.cpuUsage();
  const t = performance.now();
  const bytes = await readAll(store, wl);
  const s = (performance.now() - t) / 1000;
  const u = process.cpuUsage(cpu);
  await store.close();
  return {
    read_all_MBps: bytes / 1e6 / s,
    bytes,
    cpu_s: (u.user + u.system) / 1e6,
    user_s: u.user / 1e6,
    sys_s: u.system / 1e6,
  };
}

if (process.argv[2] === "--ours") {
  process.stdout.write(`${JSON.stringify(await ours(...process.argv.slice(3, 7)))}\n`);
  process.exit(0);
}

const size = process.argv[2] ?? "small";
const pairs = Number(process.argv[3] ?? 3);
const wl = s3Workload(size);
const dir = join(tmpdir(), `zs-s3-read-all-${process.pid}`);
mkdirSync(dir, { recursive: true });
const wlFile = join(dir, "workload.json");
writeFileSync(wlFile, JSON.stringify(wl));
const server = await startS3Server("versitygw");
try {
  const bucket = await server.makeBucket("zs-read-all");
  Object.assign(process.env, server.env);
  const store = new S3Store({ bucket, endpoint: server.endpoint, forcePathStyle: true });
  const pool = makePool(wl);
  await writeSingle(wl, pool, store);
  await store.close();
  const names = [
    "zarr-stream",
    "zarr-stream-sdk",
    "zarr-stream-socket",
    ...(EARLIER ? ["zarr-stream-earlier"] : []),
    "tensorstore",
  ];
  const rows = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  const sys = Object.fromEntries(names.map((n) => [n, []]));
  const path = {
    "zarr-stream": "lean",
    "zarr-stream-sdk": "sdk",
    "zarr-stream-socket": "socket",
    "zarr-stream-earlier": "earlier",
  };
  const turn = (name) =>
    name === "tensorstore"
      ? runTurn(PYTHON, [PEERS_S3, "tensorstore-read-all", wlFile, server.endpoint, bucket], {})
      : runTurn(
          process.execPath,
          [fileURLToPath(import.meta.url), "--ours", wlFile, server.endpoint, bucket, path[name]],
          { ZSTREAM_CODECS: "native" },
        );
  for (let i = 0; i < pairs; i++) {
    const load = loadavg()[0].toFixed(2);
    const got = {};
    // Every other turn in reverse: the first of a turn ran behind at a high load, whichever it was.
    for (const name of i % 2 === 0 ? names : [...names].reverse()) {
      const r = await turn(name);
      if (r.bytes !== totalBytes(wl))
        throw new Error(`${name} read ${r.bytes} bytes, expected ${totalBytes(wl)}`);
      rows[name].push(r.read_all_MBps);
      cpu[name].push(r.cpu_s);
      sys[name].push(r.sys_s);
      got[name] = r;
    }
    process.stderr.write(
      `turn ${i + 1} (load ${load}): ${Object.entries(got)
        .map(([n, r]) => `${n} ${r.read_all_MBps.toFixed(0)} MB/s cpu ${r.cpu_s.toFixed(2)} s`)
        .join(", ")}\n`,
    );
  }
  const med = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const ratio = (n) => med(rows[n].map((x, i) => x / rows.tensorstore[i]));
  process.stdout.write(
    `${JSON.stringify({
      workload: size,
      pairs,
      keep_alive: process.env.VGW_KEEP_ALIVE === "true",
      MBps: rows,
      cpu_s: cpu,
      median_ratio_to_tensorstore: Object.fromEntries(
        names.filter((n) => n !== "tensorstore").map((n) => [n, ratio(n)]),
      ),
      cpu_s_per_GB: Object.fromEntries(names.map((n) => [n, med(cpu[n]) / (totalBytes(wl) / 1e9)])),
      // The kernel's share (system time: TCP, connections, page faults) of each turn's CPU.
      sys_s_per_GB: Object.fromEntries(names.map((n) => [n, med(sys[n]) / (totalBytes(wl) / 1e9)])),
      load_end: loadavg(),
    })}\n`,
  );
} finally {
  await server.stop();
}

#!/usr/bin/env node
// S3Store's GETs alone, no decode: 256 objects of 2.7 MB (the small workload's shard size) read back
// through getSuffixInto with a 4 MiB window, 8 in flight, as the shard reader reads a shard, from a
// versitygw started here (VGW_KEEP_ALIVE=true in the environment turns its keep-alive on). Contenders
// take turns, each turn a process of its own and every other round in reverse order:
//   lean     this build's S3Store (the lean path, s3-lean.ts)
//   sdk      the same with sdkRequests: true (the AWS SDK's GetObject)
//   earlier  the S3Store of another build (ZS_BENCH_EARLIER_STORE=<its dist/src/index.js>, e.g. a copy
//            of packages/store/dist taken before a change), so a change is measured against what it replaces
//   socket   socket-gets.mjs: bare sockets reading straight into the buffers, below any HTTP client
// Each turn reports MB/s and its process's CPU (user and system) over the reads only.
//   node bench/s3-gets.mjs [rounds] [lean,sdk,socket,earlier]
//   node bench/s3-gets.mjs --turn KIND ENDPOINT BUCKET     (one turn; prints JSON)
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { S3Store } from "@zarr-stream/store";
import { startS3Server, TEST_CREDENTIALS } from "@zarr-stream/test-support/s3-server";
import { lastJson, run } from "./run-process.mjs";
import { withSocketGets } from "./socket-gets.mjs";

const OBJECTS = 256;
const SIZE = 2_700_000;
const IN_FLIGHT = 8;
const WINDOW = 4 * 1024 * 1024;
const EARLIER = process.env.ZS_BENCH_EARLIER_STORE;
/** Byte j of every object: no short period, so nothing on the way can shortcut the bytes. */
const valueAt = (j) => Math.imul(j, 2654435761) >>> 24;

async function turn(kind, endpoint, bucket) {
  const Store = kind === "earlier" ? (await import(pathToFileURL(resolve(EARLIER)).href)).S3Store : S3Store;
  const s3 = new Store({
    bucket,
    endpoint,
    forcePathStyle: true,
    credentials: TEST_CREDENTIALS,
    region: "us-east-1",
    sdkRequests: kind === "sdk",
  });
  const store = kind === "socket" ? withSocketGets(s3, endpoint) : s3;
  const buffers = Array.from({ length: IN_FLIGHT }, () => new Uint8Array(WINDOW));
  // One GET outside the clock: modules loaded, the client built, a first connection made.
  await store.getSuffixInto("o/0", WINDOW, buffers[0]);
  const cpu = process.cpuUsage();
  const t = performance.now();
  let next = 0;
  let bytes = 0;
  await Promise.all(
    buffers.map(async (buffer) => {
      while (next < OBJECTS) {
        const n = await store.getSuffixInto(`o/${next++}`, WINDOW, buffer);
        bytes += n ?? 0;
      }
    }),
  );
  const s = (performance.now() - t) / 1000;
  const u = process.cpuUsage(cpu);
  // Outside the clock: eight objects read again hold what was written (every 997th byte and the last).
  for (let i = 0; i < IN_FLIGHT; i++) {
    const n = await store.getSuffixInto(`o/${i}`, WINDOW, buffers[0]);
    if (n !== SIZE) throw new Error(`${kind}: o/${i} read ${n} bytes, expected ${SIZE}`);
    for (const j of [...Array.from({ length: Math.ceil(SIZE / 997) }, (_, k) => k * 997), SIZE - 1]) {
      if (buffers[0][j] !== valueAt(j)) throw new Error(`${kind}: o/${i} byte ${j} is not what was written`);
    }
  }
  await store.close();
  return { kind, MBps: bytes / 1e6 / s, bytes, user_s: u.user / 1e6, sys_s: u.system / 1e6 };
}

if (process.argv[2] === "--turn") {
  process.stdout.write(`${JSON.stringify(await turn(...process.argv.slice(3, 6)))}\n`);
  process.exit(0);
}

const rounds = Number(process.argv[2] ?? 5);
const kinds = (process.argv[3] ?? (EARLIER ? "lean,earlier" : "lean,sdk,socket")).split(",");
if (kinds.includes("earlier") && !EARLIER) throw new Error("earlier needs ZS_BENCH_EARLIER_STORE");
const server = await startS3Server("versitygw");
try {
  const bucket = await server.makeBucket("zs-gets");
  Object.assign(process.env, server.env);
  const store = new S3Store({ bucket, endpoint: server.endpoint, credentials: TEST_CREDENTIALS });
  const data = new Uint8Array(SIZE);
  for (let i = 0; i < SIZE; i++) data[i] = valueAt(i);
  for (let i = 0; i < OBJECTS; i++) await store.put(`o/${i}`, data);
  await store.close();
  const rows = Object.fromEntries(kinds.map((k) => [k, []]));
  for (let r = 0; r < rounds; r++) {
    for (const kind of r % 2 === 0 ? kinds : [...kinds].reverse()) {
      const got = lastJson(
        await run(
          process.execPath,
          [fileURLToPath(import.meta.url), "--turn", kind, server.endpoint, bucket],
          {},
        ),
      );
      if (got.bytes !== OBJECTS * SIZE) throw new Error(`${kind} read ${got.bytes} bytes`);
      rows[kind].push(got);
      const cpu = got.user_s + got.sys_s;
      process.stderr.write(
        `round ${r + 1} ${kind}: ${got.MBps.toFixed(0)} MB/s, cpu ${cpu.toFixed(2)} s (load ${loadavg()[0].toFixed(2)})\n`,
      );
    }
  }
  const med = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
  const GB = (OBJECTS * SIZE) / 1e9;
  const summary = Object.fromEntries(
    kinds.map((k) => [
      k,
      {
        MBps: med(rows[k].map((x) => x.MBps)),
        cpu_s_per_GB: med(rows[k].map((x) => x.user_s + x.sys_s)) / GB,
        user_s_per_GB: med(rows[k].map((x) => x.user_s)) / GB,
        sys_s_per_GB: med(rows[k].map((x) => x.sys_s)) / GB,
      },
    ]),
  );
  // Per-round ratios of each contender to the first: the turns of a round ran minutes apart at most.
  const [base] = kinds;
  const ratios = Object.fromEntries(
    kinds.slice(1).map((k) => [
      `${base}/${k}`,
      {
        MBps: med(rows[base].map((x, i) => x.MBps / rows[k][i].MBps)),
        cpu: med(rows[base].map((x, i) => (x.user_s + x.sys_s) / (rows[k][i].user_s + rows[k][i].sys_s))),
      },
    ]),
  );
  process.stdout.write(
    `${JSON.stringify({ rounds, keep_alive: process.env.VGW_KEEP_ALIVE === "true", summary, ratios, load_end: loadavg() })}\n`,
  );
} finally {
  await server.stop();
}

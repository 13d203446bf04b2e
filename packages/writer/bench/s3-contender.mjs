#!/usr/bin/env node
// zarr-stream's contender of the S3 bench (s3.mjs) in its own process: writes the workload through an
// S3Store on the loopback server, then reads one record's box and everything back.
// Usage: s3-contender.mjs <workload.json> <endpoint> <bucket>   (credentials from AWS_* in the environment)
// Between phases it prints `mark <phase>` and waits for a line on stdin, so the harness can count the
// server's requests of each phase while no clock runs; the last line is the JSON result.
import { createInterface } from "node:readline";
import { S3Store } from "@zarr-stream/store";
import { readAll } from "./read-all.mjs";
import { recordBoxReader } from "./record-box.mjs";
import { makePool, totalBytes } from "./workload.mjs";
import { writeSingle } from "./write-single.mjs";

const MB = 1e6;
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function mark(phase) {
  process.stdout.write(`mark ${phase}\n`);
  await lines.next();
}

async function main() {
  const [wlFile, endpoint, bucket] = process.argv.slice(2);
  const { readFileSync } = await import("node:fs");
  const wl = JSON.parse(readFileSync(wlFile, "utf8"));
  const pool = makePool(wl);
  const store = new S3Store({
    bucket,
    endpoint,
    forcePathStyle: true,
    sdkRequests: process.env.ZS_BENCH_S3_SDK === "1",
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await writeSingle(wl, pool, store);
  const writeS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await mark("written");

  // One store handle and caller-owned buffers, as contender.mjs reads a local store.
  const readOne = recordBoxReader(store, wl, pool);
  await readOne.checked();
  await mark("record");
  let warm = Number.POSITIVE_INFINITY;
  for (let i = 0; i < wl.warm_reps; i++) {
    const t = performance.now();
    await readOne();
    warm = Math.min(warm, performance.now() - t);
  }
  await mark("warm");
  const t = performance.now();
  const bytes = await readAll(store, wl);
  const allS = (performance.now() - t) / 1000;
  if (bytes !== totalBytes(wl))
    throw new Error(`read all returned ${bytes} bytes, expected ${totalBytes(wl)}`);
  await mark("read-all");
  await store.close();
  const result = {
    write_s: writeS,
    write_MBps: totalBytes(wl) / MB / writeS,
    write_cpu_s: (cpu.user + cpu.system) / 1e6,
    read_record_ms: warm,
    read_all_MBps: bytes / MB / allS,
    peak_rss_MB: process.resourceUsage().maxRSS / 1024,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

await main();

#!/usr/bin/env node
// MB/s of Store.put to the loopback S3 server (moto) vs the local disk (FsStore), same objects, same
// concurrency. Build first (`npx tsc -b packages/store`), then:
//   node packages/store/bench/s3-vs-disk.mjs [objectMiB=4] [count=32] [concurrency=4]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startS3Server } from "@zarr-stream/test-support/s3-server";
import { FsStore, S3Store } from "../dist/src/index.js";

const [mib = 4, count = 32, concurrency = 4] = process.argv.slice(2).map(Number);
const objects = Array.from({ length: count }, (_, i) => {
  const bytes = new Uint8Array(mib * 1024 * 1024);
  for (let j = 0; j < bytes.length; j += 8) bytes[j] = (i * 31 + j) & 255;
  return bytes;
});

async function mbPerSecond(store) {
  await store.put("warmup", objects[0]);
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        await store.put(`bench/c/${i}`, objects[i]);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return (mib * count) / seconds;
}

const dir = mkdtempSync(join(tmpdir(), "zs-bench-"));
const server = await startS3Server("moto", (o) => new S3Store(o));
try {
  await server.makeBucket("zs-bench");
  const disk = await mbPerSecond(new FsStore(join(dir, "disk")));
  const s3store = server.store({ bucket: "zs-bench" });
  const s3 = await mbPerSecond(s3store);
  await s3store.close();
  console.log(
    `put ${count} x ${mib} MiB, ${concurrency} at a time: local disk (FsStore, fsync) ${disk.toFixed(0)} MB/s, ` +
      `loopback S3 (moto ${server.endpoint}) ${s3.toFixed(0)} MB/s`,
  );
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

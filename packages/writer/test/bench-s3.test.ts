import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { findPython } from "@zarr-stream/test-support/python";
import { s3ServerSkipReason } from "@zarr-stream/test-support/s3-server";

// The S3 part of the bench (bench/s3.mjs), plain ESM outside src/: imported by path from dist/test/.
const s3Url = new URL("../../bench/s3.mjs", import.meta.url).href;
const python = findPython({ modules: ["tensorstore", "numpy"] });
const skip = python.skip || s3ServerSkipReason("versitygw");

/** 2 x 2 shards per time shard, 8 records in one time shard, one commit. */
const tiny = {
  lat: 48,
  lon: 96,
  records: 8,
  shard: [8, 24, 48],
  chunk: [1, 12, 24],
  read_record: 3,
  read_region: [
    [0, 24],
    [0, 72],
  ],
  pool: 2,
  warm_reps: 1,
};

describe("the S3 bench", { skip }, () => {
  it("writes and reads through versitygw by zarr-stream and TensorStore, counting each phase's requests at the server", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zs-bench-s3-test-"));
    try {
      const { runS3Bench, formatS3Report } = await import(s3Url);
      const json = join(dir, "out.json");
      const out = await runS3Bench({
        size: "quick",
        workload: tiny,
        rounds: 1,
        only: ["zarr-stream-s3", "tensorstore-s3"],
        json,
        workDir: dir,
        log: () => {},
      });
      assert.deepEqual(JSON.parse(readFileSync(json, "utf8")), JSON.parse(JSON.stringify(out)));
      for (const name of ["zarr-stream-s3", "tensorstore-s3"]) {
        const c = out.contenders[name];
        assert.equal(c.error, undefined, `${name}: ${c.error}`);
        for (const key of ["write_MBps", "read_all_MBps", "read_record_ms"])
          assert.ok(c[key] > 0 && Number.isFinite(c[key]), `${name}.${key} = ${c[key]}`);
        // The read-all pass reads each of the 4 variables' 2 x 2 shards once, each with one GET, plus
        // zarr.json where a contender reads it: counted at the server, not by the client.
        const readAll = c.requests["read-all"];
        assert.equal(readAll.by_op.GetObject, readAll.requests, JSON.stringify(readAll));
        assert.ok(readAll.requests >= 16 && readAll.requests <= 20, `${name}: ${readAll.requests} GETs`);
        assert.ok(c.requests.written.by_op.PutObject >= 16, JSON.stringify(c.requests.written));
        assert.equal(c.requests_per_commit, c.requests.written.requests);
      }
      assert.match(formatS3Report(out), /zarr-stream-s3 \/ tensorstore-s3: write [0-9.]+x/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

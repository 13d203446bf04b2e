import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { interopPython } from "@zarr-stream/test-support/python";

// The harness is plain ESM outside src/ (it is a tool, not part of the package's API): import it by path
// from dist/test/.
const harnessUrl = new URL("../../bench/harness.mjs", import.meta.url).href;
const { skip } = interopPython();

/** A workload small enough for CI: 4 shard rows (so the 4-writer variants split it), 8 records. */
const tiny = {
  lat: 48,
  lon: 96,
  records: 8,
  shard: [8, 12, 48],
  chunk: [1, 12, 24],
  read_record: 3,
  read_region: [
    [0, 24],
    [0, 72],
  ],
  pool: 2,
  cold: false,
  warm_reps: 1,
};

const isPositive = (x: unknown) => typeof x === "number" && Number.isFinite(x) && x > 0;

describe("the benchmark harness: figures over rounds", () => {
  it("keeps every throughput's highest (the limit's too), every time's lowest and the worst peak RSS", async () => {
    const { best } = await import(harnessUrl);
    const round = (x: number) => ({
      compress_MBps_1core: 200 + x,
      compress_MBps_allcores: 400 - x,
      write_MBps: 300 + x,
      read_record_ms: 5 - x,
      read_record_cold_ms: 10 + x,
      peak_rss_MB: 400 + x,
      load_avg: [x],
    });
    const kept = [round(0), round(2), round(1)].reduce((a, b) => best(a, b), undefined);
    assert.deepEqual(kept, {
      compress_MBps_1core: 202,
      compress_MBps_allcores: 400,
      write_MBps: 302,
      read_record_ms: 3,
      read_record_cold_ms: 10,
      peak_rss_MB: 402,
      load_avg: [0, 2, 1],
    });
  });
});

describe("the benchmark harness", { skip }, () => {
  it("bench:quick's harness measures every contender and writes JSON with the required keys", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zs-bench-test-"));
    try {
      const { runBench, CONTENDERS } = await import(harnessUrl);
      const json = join(dir, "out.json");
      const out = await runBench({
        quick: true,
        workload: tiny,
        rounds: 1,
        json,
        workDir: dir,
        log: () => {},
      });
      const parsed = JSON.parse(readFileSync(json, "utf8"));
      assert.deepEqual(parsed, JSON.parse(JSON.stringify(out)));
      assert.equal(parsed.workload.lat, 48);
      assert.equal(parsed.workload.records, 8);
      assert.ok(isPositive(parsed.limit.compress_MBps_1core), JSON.stringify(parsed.limit));
      assert.ok(isPositive(parsed.limit.compress_MBps_allcores), JSON.stringify(parsed.limit));
      assert.deepEqual(CONTENDERS, [
        "zarr-stream",
        "zarr-stream-wasm",
        "zarr-python",
        "zarr-python-zarrs",
        "tensorstore",
      ]);
      for (const name of CONTENDERS) {
        const c = parsed.contenders[name];
        assert.ok(c !== undefined && c.error === undefined, `${name}: ${JSON.stringify(c)}`);
        for (const key of ["write_MBps", "read_record_ms", "read_all_MBps", "peak_rss_MB"])
          assert.ok(isPositive(c[key]), `${name}.${key} = ${c[key]}`);
      }
      assert.equal(parsed.contenders["zarr-stream"].backend, "native");
      assert.equal(parsed.contenders["zarr-stream-wasm"].backend, "wasm");
      assert.equal(parsed.contenders["zarr-stream"].direct_io, true);
      assert.equal(parsed.contenders["zarr-stream-node-fs"].direct_io, false);
      for (const name of ["zarr-stream-node-fs", "zarr-stream-4regions", "zarr-stream-4procs"])
        assert.ok(
          isPositive(parsed.contenders[name].write_MBps),
          `${name}: ${JSON.stringify(parsed.contenders[name])}`,
        );
      const s = parsed.scaling;
      assert.deepEqual(
        s.commit_vs_writers.map((p: { writers: number }) => p.writers),
        [1, 4, 16],
      );
      for (const p of s.commit_vs_writers) assert.ok(isPositive(p.commit_ms));
      assert.equal(s.manifest_vs_records.append.length, 2);
      assert.equal(s.manifest_vs_records.indexed.length, 2);
      for (const p of [...s.manifest_vs_records.append, ...s.manifest_vs_records.indexed]) {
        assert.ok(isPositive(p.commit_bytes) && isPositive(p.commit_ms), JSON.stringify(p));
      }
      // Both forms of the manifest: the seed's (the default) beside the paged one.
      assert.equal(s.manifest_vs_records.seed.append.length, 2);
      assert.equal(s.manifest_vs_records.seed.indexed.length, 2);
      // More committed records in an indexed store means more manifest entries.
      assert.ok(
        s.manifest_vs_records.indexed[1].manifest_bytes > s.manifest_vs_records.indexed[0].manifest_bytes,
      );
      assert.ok(
        s.rss_and_read_vs_records.rss.every((p: { peak_rss_MB: number }) => isPositive(p.peak_rss_MB)),
      );
      assert.ok(
        s.rss_and_read_vs_records.read.every((p: { read_record_ms: number }) => isPositive(p.read_record_ms)),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
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
      write_cpu_s: 2 - x,
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
      write_cpu_s: 0,
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

// The workload matrix (bench/matrix.mjs): its ratios and worst cells from given figures, its cells'
// validity, and one tiny matrix with every contender.
const matrixUrl = new URL("../../bench/matrix.mjs", import.meta.url).href;
const workloadUrl = new URL("../../bench/workload.mjs", import.meta.url).href;

describe("the workload matrix: ratios and worst cells", () => {
  it("divides ours by each peer, frames by c-blosc's, writer CPU by encode-only CPU, and picks each ratio's worst cell", async () => {
    const { cellRatios, worstCells, formatMatrix } = await import(matrixUrl);
    const cell = (name: string, ours: number, ts: number, frames: number, cpu: number) => ({
      name,
      ratios: cellRatios({
        "zarr-stream": { write_MBps: ours, read_all_MBps: 2 * ours, store_bytes: 1010, write_cpu_s: cpu },
        "zarr-python-zarrs": { write_MBps: 100, read_all_MBps: 100, store_bytes: 1000 },
        tensorstore: { write_MBps: ts, read_all_MBps: 400, store_bytes: 1000 },
        "encode-only": { compressed_bytes: frames, encode_cpu_s: 1 },
        limit: { compressed_bytes: 1000 },
      }),
    });
    const cells = [
      cell("a", 150, 100, 1004, 1.05),
      cell("b", 120, 200, 1020, 1.3),
      cell("c", 90, 50, 990, 1.0),
    ];
    assert.deepEqual(cells[0]!.ratios, {
      "write/zarr-python-zarrs": 1.5,
      "read_all/zarr-python-zarrs": 3,
      "store/zarr-python-zarrs": 1.01,
      "write/tensorstore": 1.5,
      "read_all/tensorstore": 0.75,
      "store/tensorstore": 1.01,
      "frames/c-blosc": 1.004,
      "writer_cpu/encode_cpu": 1.05,
    });
    const worst = worstCells(cells);
    // Speeds: the lowest ratio; sizes and CPU: the highest.
    assert.deepEqual(worst["write/zarr-python-zarrs"], { cell: "c", value: 0.9 });
    assert.deepEqual(worst["write/tensorstore"], { cell: "b", value: 0.6 });
    assert.deepEqual(worst["frames/c-blosc"], { cell: "b", value: 1.02 });
    assert.deepEqual(worst["writer_cpu/encode_cpu"], { cell: "b", value: 1.3 });
    const text = formatMatrix({
      machine: { cpus: 2, cpu_model: "x", rounds: 1, load_avg: { min: 0, max: 1 }, minutes: 1 },
      cells: cells.map((c) => ({ ...c, data_MB: 1, contenders: {} })),
      worst,
    });
    assert.match(text, /LOSS +write\/tensorstore: 0\.600 in "b"/);
    assert.match(text, /MISSED +frames\/c-blosc: 1\.020 in "b"/);
  });

  it("puts each peer's speed under our codec's ceiling (its CPU over the cores) and lists the targets above it", async () => {
    const { cellRatios, outOfReach, formatMatrix, worstCells } = await import(matrixUrl);
    // 100 MB encoded in 1 s of CPU and decoded in 0.1 s: on 2 cores at most 200 MB/s written and 2,000 read.
    const codec = {
      encode_MBps: 100,
      encode_s: 1,
      encode_cpu_s: 1,
      decode_MBps: 1000,
      decode_s: 0.1,
      decode_cpu_s: 0.1,
    };
    const ratios = cellRatios(
      {
        "zarr-stream": { write_MBps: 150, read_all_MBps: 1000 },
        "zarr-python-zarrs": { write_MBps: 160, read_all_MBps: 1000 },
        tensorstore: { write_MBps: 100, read_all_MBps: 1800 },
        "encode-only": codec,
      },
      2,
    );
    assert.equal(ratios["write_ceiling/zarr-python-zarrs"], 200 / 160);
    assert.equal(ratios["write_ceiling/tensorstore"], 2);
    assert.equal(ratios["read_all_ceiling/zarr-python-zarrs"], 2);
    assert.equal(ratios["read_all_ceiling/tensorstore"], 2000 / 1800);
    const cells = [{ name: "a", ratios, data_MB: 100, contenders: {} }];
    assert.deepEqual(
      outOfReach(cells).map((u: { what: string; peer: string }) => `${u.what}/${u.peer}`),
      ["write/zarr-python-zarrs", "read_all/tensorstore"],
    );
    // The ceilings are not ratios of ours: no worst cell for them.
    assert.equal(
      Object.keys(worstCells(cells)).some((k) => k.includes("ceiling")),
      false,
    );
    const text = formatMatrix({
      machine: { cpus: 2, cpu_model: "x", rounds: 1, load_avg: { min: 0, max: 1 }, minutes: 1 },
      cells,
      worst: worstCells(cells),
    });
    assert.match(text, /write\/zarr-python-zarrs in "a": at most 1\.25x/);
    assert.match(text, /read_all\/tensorstore in "a": at most 1\.11x/);
  });

  it("has cells the writer accepts, one factor away from the base each, with 4 writers splitting the grid evenly", async () => {
    const { matrixCells, baseCell } = await import(matrixUrl);
    const { streamSchema } = await import(workloadUrl);
    const { validateStreamSchema } = await import("@zarr-stream/spec");
    const cells = matrixCells();
    const base = baseCell();
    assert.equal(cells[0].name, "base");
    assert.deepEqual(new Set(cells.map((c: { name: string }) => c.name)).size, cells.length);
    for (const c of cells) {
      validateStreamSchema(streamSchema(c.wl));
      assert.ok(c.wl.read_record < c.wl.records && c.wl.records % c.wl.shard[0] === 0, c.name);
      const changed = Object.keys(base).filter(
        (k) =>
          !["commit_every", "read_region"].includes(k) && JSON.stringify(base[k]) !== JSON.stringify(c.wl[k]),
      );
      // One factor; the chunk and time-shard factors move the shard (and the grid) with them.
      assert.ok(c.factor === "issue" || changed.length <= 3, `${c.name}: ${changed}`);
      if (c.wl.writers === 4) assert.equal((c.wl.lat / c.wl.shard[1]) % 4, 0);
    }
    for (const factor of ["profile", "dtype", "chunk", "grid", "time shard", "writers"])
      assert.ok(
        cells.some((c: { factor: string }) => c.factor === factor),
        factor,
      );
  });
});

describe("the Python peers' commits", { skip }, () => {
  it("write at our contender's cadence: a commit every commit_every records and at each time shard's end", () => {
    const python = interopPython().require();
    const peers = fileURLToPath(new URL("../../../../python", import.meta.url));
    const cadence = (wl: object) => {
      const code = `import json, sys; import bench_peers as bp
wl = json.loads(sys.argv[1]); print(json.dumps([[r0, m] for r0, m, _ in bp.commit_blocks(wl, bp.make_pool(wl))]))`;
      const res = spawnSync(python, ["-c", code, JSON.stringify(wl)], { cwd: peers, encoding: "utf8" });
      assert.equal(res.status, 0, res.stderr);
      return JSON.parse(res.stdout);
    };
    const vars = [{ name: "a", dtype: "float32", kind: "smooth", base: 0, amp: 1 }];
    const wl = { ...tiny, vars, records: 10, shard: [4, 24, 48], pool: 2 };
    // Commits after records 3, 6 and 9 (every 3) and time shards ending at 4 and 8: each piece is one
    // peer transaction (or append), as each of our flushes writes what changed since the last.
    assert.deepEqual(cadence({ ...wl, commit_every: 3 }), [
      [0, 3],
      [3, 1],
      [4, 2],
      [6, 2],
      [8, 1],
      [9, 1],
    ]);
    assert.deepEqual(cadence({ ...wl, commit_every: 4 }), [
      [0, 4],
      [4, 4],
      [8, 2],
    ]);
    assert.deepEqual(cadence({ ...wl, commit_every: 8 }), [
      [0, 4],
      [4, 4],
      [8, 2],
    ]);
  });
});

describe("the workload matrix", { skip }, () => {
  it("runs a tiny matrix with every contender in each cell and reports the worst cell of each ratio", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zs-matrix-test-"));
    try {
      const { runMatrix, formatMatrix } = await import(matrixUrl);
      const json = join(dir, "m.json");
      const out = await runMatrix({ quick: true, rounds: 1, json, workDir: dir, log: () => {} });
      assert.deepEqual(JSON.parse(readFileSync(json, "utf8")), JSON.parse(JSON.stringify(out)));
      assert.deepEqual(
        out.cells.map((c: { name: string }) => c.name),
        ["base", "grid edge chunks 60x120", "writers 4"],
      );
      for (const c of out.cells) {
        for (const name of ["zarr-stream", "zarr-python-zarrs", "tensorstore"])
          assert.ok(
            isPositive(c.contenders[name].write_MBps),
            `${c.name} ${name}: ${JSON.stringify(c.contenders[name])}`,
          );
        assert.ok(
          isPositive(c.contenders.limit.compressed_bytes) &&
            isPositive(c.contenders["encode-only"].encode_cpu_s),
        );
        // Our frames and c-blosc's on the same chunks: within a few percent at most.
        assert.ok(Math.abs(c.ratios["frames/c-blosc"] - 1) < 0.05, JSON.stringify(c.ratios));
        for (const k of ["write/zarr-python-zarrs", "write/tensorstore"])
          assert.ok(isPositive(c.ratios[k]), k);
      }
      // One writer: everything measured; four: writes only (four processes), read-all from the peers.
      for (const k of ["read_all/tensorstore", "store/tensorstore", "writer_cpu/encode_cpu"]) {
        assert.ok(isPositive(out.cells[0].ratios[k]), k);
        assert.equal(out.cells[2].ratios[k], undefined);
      }
      assert.equal(out.cells[2].contenders["zarr-stream"].writers, 4);
      assert.ok(isPositive(out.worst["write/tensorstore"].value));
      assert.match(formatMatrix(out), /worst cell of each ratio/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The workload matrix (issue #38): one factor at a time around a base cell, every contender in each cell
// of the same run, per cell write and read-all MB/s, the ratios ours / each peer, the store sizes, our
// Blosc frames against numcodecs' c-blosc on the same chunks, and the writer's CPU against our codec's
// encode-only CPU; then the worst cell of each ratio. bench.mjs --matrix is the command line; the README
// ("The workload matrix") says why the cells are what they are.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { best, lastJson, measure, run } from "./harness.mjs";
import { totalBytes } from "./workload.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));

/** Our contender's name in a cell's results, and the peers it is compared with. */
export const OURS = "zarr-stream";
export const PEERS = ["zarr-python-zarrs", "tensorstore"];
/** The previous build's writer, run only with --baseline (before/after in the same run). */
export const BASELINE = "zarr-stream-baseline";

/** One smooth and one noisy variable of `dtype`, with values that suit it (integers take the floor). */
function varsOf(dtype) {
  const smooth = { float64: [280, 25], float32: [280, 25], int32: [0, 1e6], uint8: [128, 100] }[dtype];
  const scale = { float64: 10, float32: 10, int32: 1e6, uint8: 16 }[dtype];
  return [
    { name: "smooth", dtype, kind: "smooth", base: smooth[0], amp: smooth[1] },
    { name: "noise", dtype, kind: "noise", scale },
  ];
}

/**
 * The base cell: 1024 x 1024, two float32 variables (one smooth, one noise), 8 records, time shards of
 * 4 records (one commit each), shard (4, 256, 512) of inner chunks (1, 128, 256) = 128 KiB, diagnostic
 * profile, one writer: 64 MiB, so a cell's contenders take seconds each.
 */
export function baseCell() {
  return {
    lat: 1024,
    lon: 1024,
    records: 8,
    shard: [4, 256, 512],
    chunk: [1, 128, 256],
    profile: "diagnostic",
    commit_every: 4,
    vars: varsOf("float32"),
    pool: 2,
    read_record: 1,
    read_region: [
      [0, 256],
      [0, 512],
    ],
    cold: false,
    warm_reps: 1,
    // A cell's read-all takes tens of ms, so much of its first pass is the process's warm-up: the best of
    // three passes is its steady speed. Both are reported, for every contender.
    read_all_passes: 3,
    writers: 1,
  };
}

/**
 * A cell from the base with `over` applied; the time shard is the commit cadence unless `over` sets one,
 * and the read stays in range.
 */
function cell(name, factor, over, base = baseCell()) {
  const wl = { ...base, ...over };
  wl.commit_every = over.commit_every ?? wl.shard[0];
  wl.read_region = [
    [0, Math.min(wl.lat, wl.shard[1])],
    [0, Math.min(wl.lon, wl.shard[2])],
  ];
  return { name, factor, wl };
}

/**
 * The cells: the base, then each factor's other levels with everything else at the base. A full
 * factorial (3 profiles x 4 dtypes x 5 chunk sizes x 3 grids x 3 time shards x 2 writer counts = 1080
 * cells) would take days on two cores; one factor at a time shows which factor costs what, and the
 * issue's checkpoint workload, where the peers led, is a cell of its own.
 */
export function matrixCells() {
  const base = baseCell();
  const chunkCell = (label, chunk, shard) => cell(`chunk ${label}`, "chunk", { chunk, shard });
  return [
    cell("base", "base", {}),
    cell("profile checkpoint", "profile", { profile: "checkpoint" }),
    cell("profile wasm", "profile", { profile: "wasm" }),
    cell("dtype float64", "dtype", { vars: varsOf("float64") }),
    cell("dtype int32", "dtype", { vars: varsOf("int32") }),
    cell("dtype uint8", "dtype", { vars: varsOf("uint8") }),
    chunkCell("16KiB", [1, 64, 64], base.shard),
    chunkCell("64KiB", [1, 128, 128], base.shard),
    // A shard holds whole chunks: the larger chunks take larger shards.
    chunkCell("1MiB", [1, 512, 512], [4, 512, 512]),
    chunkCell("4MiB", [1, 1024, 1024], [4, 1024, 1024]),
    // Chunk-aligned but not shard-aligned: edge shards whose edge chunks are absent, none partial.
    cell("grid edge shards 896x768", "grid", { lat: 896, lon: 768 }),
    // Neither: edge shards holding partial edge chunks.
    cell("grid edge chunks 1000x1000", "grid", { lat: 1000, lon: 1000 }),
    cell("time shard 1", "time shard", { shard: [1, 256, 512] }),
    // 32 records in a time shard: the grid shrinks to keep the cell's bytes.
    cell("time shard 32", "time shard", { records: 32, lat: 256, shard: [32, 256, 512] }),
    // A commit after every record of those time shards: each commit rewrites the time shard's shards.
    cell("time shard 32 committed per record", "commits", {
      records: 32,
      lat: 256,
      shard: [32, 256, 512],
      commit_every: 1,
    }),
    cell("writers 4", "writers", { writers: 4 }),
    // The checkpoint workload: Blosc zstd 7, edge shards and partial edge chunks on 721 x 1441.
    cell("issue checkpoint 721x1441", "issue", {
      lat: 721,
      lon: 1441,
      shard: [4, 240, 480],
      chunk: [1, 120, 240],
      profile: "checkpoint",
    }),
  ];
}

/** A tiny matrix that checks the harness in seconds: the base, an edge-chunk grid and 4 writers. */
export function quickMatrixCells() {
  const base = {
    ...baseCell(),
    lat: 64,
    lon: 128,
    shard: [4, 16, 64],
    chunk: [1, 16, 32],
  };
  return [
    cell("base", "base", {}, base),
    cell("grid edge chunks 60x120", "grid", { lat: 60, lon: 120 }, base),
    cell("writers 4", "writers", { writers: 4 }, base),
  ];
}

/** Contenders of one cell, in the order of the first round (later rounds alternate it). */
function contendersOf(c, baseline) {
  return [
    "limit",
    "encode-only",
    OURS,
    ...PEERS,
    ...(baseline !== undefined && c.wl.writers === 1 ? [BASELINE] : []),
  ];
}

/** One measurement: ours and the baseline through their contender.mjs, the peers through the harness. */
async function measureIn(name, c, wlFile, workDir, baseline) {
  const dir = join(workDir, "store");
  const node = (script, mode) =>
    run(process.execPath, [script, mode, wlFile, dir], { ZSTREAM_CODECS: "native" }).then(lastJson);
  if (name === "encode-only") return node(join(here, "contender.mjs"), "encode-only");
  if (name === BASELINE) return node(join(baseline, "packages/writer/bench/contender.mjs"), "single");
  if (name === OURS && c.wl.writers === 4) {
    // Four OS processes (owner and three contributors) on lat bands: the harness's zarr-stream-4procs,
    // which times the writes only.
    return { ...(await measure("zarr-stream-4procs", wlFile, c.wl, workDir)), writers: 4 };
  }
  return measure(name, wlFile, c.wl, workDir);
}

const num = (x) => typeof x === "number" && Number.isFinite(x);
const div = (a, b) => (num(a) && num(b) && b > 0 ? a / b : undefined);

/**
 * The fastest a writer (reader) of ours could go with the codec it has, on `cores` cores: the cell's
 * bytes over the encode-only (decode-only) CPU spread perfectly over every core. No overhead, no idle
 * core: a ceiling, not an estimate. Where a peer's speed times a target ratio is above it, only a faster
 * codec could meet that target.
 */
function codecCeilings(codec, cores) {
  const over = (MBps, s, cpu) => div(num(MBps) && num(s) ? MBps * s : undefined, div(cpu, cores));
  return {
    write: over(codec?.encode_MBps, codec?.encode_s, codec?.encode_cpu_s),
    read: over(codec?.decode_MBps, codec?.decode_s, codec?.decode_cpu_s),
  };
}

/**
 * The ratios of one cell (undefined where a figure is missing). Higher is better for write_ and read_;
 * the *_ceiling ones are codecCeilings over each peer's speed.
 */
export function cellRatios(r, cores = availableParallelism()) {
  const ours = r[OURS] ?? {};
  const ceiling = codecCeilings(r["encode-only"], cores);
  const out = {};
  for (const p of PEERS) {
    const peer = r[p] ?? {};
    out[`write/${p}`] = div(ours.write_MBps, peer.write_MBps);
    out[`read_all/${p}`] = div(ours.read_all_MBps, peer.read_all_MBps);
    out[`read_all_best/${p}`] = div(ours.read_all_best_MBps, peer.read_all_best_MBps);
    out[`store/${p}`] = div(ours.store_bytes, peer.store_bytes);
    out[`write_ceiling/${p}`] = div(ceiling.write, peer.write_MBps);
    out[`read_all_ceiling/${p}`] = div(ceiling.read, peer.read_all_MBps);
  }
  out["frames/c-blosc"] = div(r["encode-only"]?.compressed_bytes, r.limit?.compressed_bytes);
  out["writer_cpu/encode_cpu"] = div(ours.write_cpu_s, r["encode-only"]?.encode_cpu_s);
  if (r[BASELINE]) {
    out["write/baseline"] = div(ours.write_MBps, r[BASELINE].write_MBps);
    out["read_all/baseline"] = div(ours.read_all_MBps, r[BASELINE].read_all_MBps);
    out["writer_cpu/baseline"] = div(ours.write_cpu_s, r[BASELINE].write_cpu_s);
  }
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

/** Whether a larger value of ratio `key` is worse (sizes and CPU) rather than better (speeds). */
export const largerIsWorse = (key) =>
  key.startsWith("store/") || key.startsWith("frames/") || key.startsWith("writer_cpu/");

const isCeiling = (key) => key.includes("_ceiling/");

/** The per-cell targets (#38): ours over each peer, write and read-all. */
export const CELL_TARGETS = { write: 1.3, read_all: 1.2 };

/**
 * The cells where a target of CELL_TARGETS is above the codec's ceiling against some peer: [{cell, what,
 * peer, ceiling}], what a faster writer or reader alone cannot meet.
 */
export function outOfReach(cells) {
  const out = [];
  for (const c of cells)
    for (const [what, target] of Object.entries(CELL_TARGETS))
      for (const p of PEERS) {
        const ceiling = c.ratios[`${what}_ceiling/${p}`];
        if (num(ceiling) && ceiling < target) out.push({ cell: c.name, what, peer: p, ceiling });
      }
  return out;
}

/** The worst cell of each ratio over the cells: {ratio: {cell, value}}; the ceilings are not ratios of ours. */
export function worstCells(cells) {
  const worst = {};
  for (const c of cells) {
    for (const [k, v] of Object.entries(c.ratios)) {
      if (isCeiling(k)) continue;
      const w = worst[k];
      if (w === undefined || (largerIsWorse(k) ? v > w.value : v < w.value))
        worst[k] = { cell: c.name, value: v };
    }
  }
  return worst;
}

/**
 * Runs the matrix: each round goes through every cell, and each cell runs its contenders one after
 * another (the order reversed every other round), so a cell's figures come from minutes apart at most;
 * each figure is its best over rounds. opts: {quick, cells (names), rounds, json, workDir, baseline
 * (a built checkout whose writer runs as zarr-stream-baseline), log}.
 */
export async function runMatrix(opts = {}) {
  const log = opts.log ?? ((s) => process.stderr.write(`${s}\n`));
  const all = opts.quick ? quickMatrixCells() : matrixCells();
  const cells = opts.cells ? all.filter((c) => opts.cells.includes(c.name)) : all;
  if (cells.length === 0) throw new Error(`no cell is named ${opts.cells.join(", ")}`);
  const rounds = opts.rounds ?? (opts.quick ? 1 : 2);
  const baseline = opts.baseline === undefined ? undefined : resolve(opts.baseline);
  const workDir = opts.workDir ?? join(tmpdir(), `zs-matrix-${process.pid}`);
  mkdirSync(workDir, { recursive: true });
  const results = cells.map(() => ({}));
  const errors = cells.map(() => ({}));
  const loads = [];
  const t0 = performance.now();
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of cells.entries()) {
      const wlFile = join(workDir, `cell-${i}.json`);
      writeFileSync(wlFile, JSON.stringify(c.wl));
      const names = contendersOf(c, baseline);
      if (round % 2 === 1) names.reverse();
      for (const name of names) {
        const load = loadavg()[0];
        loads.push(load);
        try {
          const r = await measureIn(name, c, wlFile, workDir, baseline);
          r.load_avg = [Number(load.toFixed(2))];
          results[i][name] = best(results[i][name], r);
          delete errors[i][name];
        } catch (e) {
          if (results[i][name] === undefined) errors[i][name] = e.message;
          log(`  ${c.name} ${name}: FAILED ${e.message.split("\n")[0]}`);
        }
      }
      rmSync(join(workDir, "store"), { recursive: true, force: true });
      const r = results[i];
      log(
        `round ${round + 1}/${rounds} ${c.name}: write ${[OURS, ...PEERS].map((n) => fmt(r[n]?.write_MBps, 0)).join("/")} MB/s, read all ${[OURS, ...PEERS].map((n) => fmt(r[n]?.read_all_MBps, 0)).join("/")} MB/s (load ${loadavg()[0].toFixed(2)}, ${((performance.now() - t0) / 1000).toFixed(0)} s)`,
      );
    }
  }
  const out = {
    machine: {
      cpus: availableParallelism(),
      cpu_model: cpus()[0]?.model ?? "",
      node: process.version,
      rounds,
      load_avg: { min: Math.min(...loads), max: Math.max(...loads), end: loadavg() },
      minutes: (performance.now() - t0) / 60000,
    },
    ...(baseline === undefined ? {} : { baseline }),
    cells: cells.map((c, i) => ({
      name: c.name,
      factor: c.factor,
      workload: c.wl,
      data_MB: totalBytes(c.wl) / 1e6,
      contenders: Object.fromEntries(
        contendersOf(c, baseline).map((n) => [n, results[i][n] ?? { error: errors[i][n] ?? "not run" }]),
      ),
      ratios: cellRatios(results[i]),
    })),
  };
  out.worst = worstCells(out.cells);
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(out, null, 2)}\n`);
  return out;
}

function fmt(x, d = 1) {
  return num(x) ? x.toFixed(d) : "-";
}

function table(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
  return rows.map((r) => r.map((x, c) => String(x).padEnd(widths[c])).join("  ")).join("\n");
}

/** The matrix as text: one row per cell, then the worst cell of each ratio. */
export function formatMatrix(out) {
  const { machine } = out;
  const lines = [
    `workload matrix: ${out.cells.length} cells, best of ${machine.rounds}; ${machine.cpus} x ${machine.cpu_model}, load ${fmt(machine.load_avg.min, 2)}-${fmt(machine.load_avg.max, 2)}, ${fmt(machine.minutes)} min`,
    "write and read-all (first pass) in MB/s as zs/zarrs/ts; zs/peer ratios (best r: the best of the read-all passes); sizes: our store / each peer's, our Blosc frames / c-blosc's on the same chunks; CPU: writer / our encode-only;",
    "ceil w, ceil r: the most our write and read-all could lead the slower-to-beat peer by with our codec (its encode-only and decode-only CPU spread over every core)",
  ];
  const baseline = out.baseline !== undefined;
  const head = [
    "cell",
    "MB",
    "write",
    "w/zarrs",
    "w/ts",
    "read all",
    "r/zarrs",
    "r/ts",
    "best r/zarrs",
    "best r/ts",
    "store MB zs/zarrs/ts",
    "s/zarrs",
    "s/ts",
    "frames/c-blosc",
    "cpu w/enc",
    "ceil w",
    "ceil r",
    ...(baseline ? ["w/before", "r/before", "cpu/before"] : []),
  ];
  const rows = [head];
  for (const c of out.cells) {
    const r = c.contenders;
    const q = c.ratios;
    const three = (k, d) => [OURS, ...PEERS].map((n) => fmt(r[n]?.[k], d)).join("/");
    rows.push([
      c.name,
      fmt(c.data_MB, 0),
      three("write_MBps", 0),
      fmt(q["write/zarr-python-zarrs"], 2),
      fmt(q["write/tensorstore"], 2),
      three("read_all_MBps", 0),
      fmt(q["read_all/zarr-python-zarrs"], 2),
      fmt(q["read_all/tensorstore"], 2),
      fmt(q["read_all_best/zarr-python-zarrs"], 2),
      fmt(q["read_all_best/tensorstore"], 2),
      [OURS, ...PEERS]
        .map((n) => fmt(num(r[n]?.store_bytes) ? r[n].store_bytes / 1e6 : undefined, 2))
        .join("/"),
      fmt(q["store/zarr-python-zarrs"], 4),
      fmt(q["store/tensorstore"], 4),
      fmt(q["frames/c-blosc"], 4),
      fmt(q["writer_cpu/encode_cpu"], 2),
      fmt(lowest(q, "write_ceiling/"), 2),
      fmt(lowest(q, "read_all_ceiling/"), 2),
      ...(baseline
        ? [fmt(q["write/baseline"], 2), fmt(q["read_all/baseline"], 2), fmt(q["writer_cpu/baseline"], 3)]
        : []),
    ]);
  }
  lines.push(table(rows));
  const failed = out.cells.flatMap((c) =>
    Object.entries(c.contenders)
      .filter(([, v]) => v.error !== undefined)
      .map(([n, v]) => `${c.name} ${n}: ${v.error.split("\n")[0]}`),
  );
  if (failed.length > 0) lines.push("not measured:", ...failed.map((s) => `  ${s}`));
  lines.push("worst cell of each ratio (lowest speed ratio; highest size or CPU ratio):");
  const target = {
    "frames/c-blosc": (v) => v <= 1.005,
    "writer_cpu/encode_cpu": (v) => v <= 1.1,
    "write/zarr-python-zarrs": (v) => v >= 1,
    "write/tensorstore": (v) => v >= 1,
    "read_all/zarr-python-zarrs": (v) => v >= 1,
    "read_all/tensorstore": (v) => v >= 1,
    "read_all_best/zarr-python-zarrs": (v) => v >= 1,
    "read_all_best/tensorstore": (v) => v >= 1,
  };
  const why = {
    "frames/c-blosc": " (target <= 1.005)",
    "writer_cpu/encode_cpu": " (target <= 1.10)",
  };
  for (const [k, w] of Object.entries(out.worst)) {
    const ok = target[k];
    // A speed ratio below 1 is a cell we lose; a size or CPU ratio past its target is a target missed.
    const mark =
      ok === undefined ? "      " : ok(w.value) ? "met   " : largerIsWorse(k) ? "MISSED" : "LOSS  ";
    lines.push(`  ${mark} ${k}: ${fmt(w.value, 3)} in "${w.cell}"${why[k] ?? ""}`);
  }
  const unreachable = outOfReach(out.cells);
  lines.push(
    `targets above the codec's ceiling (write >= ${CELL_TARGETS.write}x, read-all >= ${CELL_TARGETS.read_all}x each peer): ${unreachable.length === 0 ? "none" : ""}`,
    ...unreachable.map((u) => `  ${u.what}/${u.peer} in "${u.cell}": at most ${fmt(u.ceiling, 2)}x`),
  );
  return `${lines.join("\n")}\n`;
}

/** The lowest of the cell's ratios whose key starts with `prefix` (one per peer). */
function lowest(q, prefix) {
  const vs = Object.entries(q)
    .filter(([k, v]) => k.startsWith(prefix) && num(v))
    .map(([, v]) => v);
  return vs.length === 0 ? undefined : Math.min(...vs);
}

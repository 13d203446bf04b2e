// The JavaScript peers (issue #38): read-all and one-record reads of one store by zarr-stream and by
// zarrita.js (with its own codecs, numcodecs.js), in Node and in headless Chromium.
//
// - Node: each read is a process of its own (ours: FsStore; zarrita: @zarrita/storage's FileSystemStore),
//   the two taking turns `pairs` times on the same store, so a drift of the shared machine moves both alike.
// - Chromium: the store is served by the viewer's own server (serveViewer: ETags, single ranges); one page
//   holds both readers, ours as the viewer reads (HttpStore and the reader's browser build, our SIMD wasm
//   codecs) and zarrita's FetchStore, and runs them in turns; the page times each read and hands the
//   figures back to Node.
//
// Both read the same boxes as the bench: read-all (every variable a time shard at a time) and the record
// box (record `read_record`, lat × lon `read_region`, every variable). Ours reads the record through
// readRecord (committed data: the manifest is revalidated on each read, as the viewer reads); zarrita reads
// the arrays as they stand, with no commit check.
//   node bench/js-peers.mjs [--quick] [--pairs N] [--no-browser] [--json FILE]     (alone)
//   node bench/js-peers.mjs worker ours|zarrita WORKLOAD.json STORE_DIR            (one Node turn)
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { expectedBox, readers, sameBytes, turn } from "./js-peers-readers.mjs";
import { lastJson, run } from "./run-process.mjs";
import { storeFiles, warmPageCache } from "./store-files.mjs";
import { defaultWorkload, quickWorkload, totalBytes } from "./workload.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
export const CHROMIUM = "/usr/bin/chromium";
const MB = 1e6;
/** Requests in flight in the fetch-only pass: our reader's shard reads in flight (READ_CONCURRENCY). */
const FETCH_LANES = 8;
/** The targets of issue #38: read-all in Node >= 3x zarrita; in Chromium, ours >= 2x zarrita (same page). */
export const TARGETS = { node_read_all: 3, chromium_read_all: 2 };

/** Runs node with `args`; resolves with the last stdout line as JSON, rejects with the stderr tail. */
const runNode = (args, env = {}) => run(process.execPath, args, env).then(lastJson);

/** A Node turn (its own process): `who` reads the store at `dir` once, and prints its figures. */
async function nodeWorker(who, wlFile, dir) {
  const wl = JSON.parse(readFileSync(wlFile, "utf8"));
  const want = wl.vars.map((_, k) => expectedBox(wl, k));
  const check = (k, box) => {
    if (!sameBytes(box, want[k]))
      throw new Error(`${who}: record box of ${wl.vars[k].name} differs from what was written`);
  };
  const [reader, shard, zarrita, { readAll }] = await Promise.all([
    import("@zarr-stream/reader"),
    import("@zarr-stream/shard"),
    import("zarrita"),
    import("./read-all.mjs"),
  ]);
  const r = readers(wl, { ours: { ...reader, ...shard }, zarrita, readAll });
  let open;
  if (who === "ours") {
    const { FsStore } = await import("@zarr-stream/store");
    open = async () => r.ours(new FsStore(dir));
  } else if (who === "zarrita") {
    const { default: FileSystemStore } = await import("@zarrita/storage/fs");
    open = () => r.zarrita(new FileSystemStore(dir));
  } else throw new Error(`unknown reader ${who}`);
  const out = await turn(open, wl, check);
  if (who === "ours") out.backend = (await import("@zarr-stream/codecs")).codecBackend();
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

/** Keeps each figure's best over turns: throughputs the highest, times the lowest. */
function bestOf(turns) {
  const out = { ...turns[0] };
  for (const t of turns.slice(1))
    for (const [k, v] of Object.entries(t)) {
      if (typeof v !== "number") continue;
      out[k] = k.endsWith("_MBps") ? Math.max(out[k], v) : Math.min(out[k], v);
    }
  out.turns = turns.length;
  return out;
}

function ratiosOf(ours, zarrita) {
  return {
    read_all: ours.read_all_MBps / zarrita.read_all_MBps,
    read_record: zarrita.read_record_ms / ours.read_record_ms,
    first_record: zarrita.first_record_ms / ours.first_record_ms,
  };
}

async function nodeSide(wlFile, dir, pairs, log) {
  const turns = { ours: [], zarrita: [] };
  for (let i = 0; i < pairs; i++) {
    // Who goes first alternates, so neither always reads right after the other warmed the machine.
    const order = i % 2 === 0 ? ["ours", "zarrita"] : ["zarrita", "ours"];
    for (const who of order) {
      const r = await runNode([join(here, "js-peers.mjs"), "worker", who, wlFile, dir], {
        ZSTREAM_CODECS: "native",
      });
      r.load_avg = Number(loadavg()[0].toFixed(2));
      turns[who].push(r);
      log(`js-peers node ${who} ${i + 1}/${pairs}: ${summary(r)}`);
    }
  }
  const ours = bestOf(turns.ours);
  const zarrita = bestOf(turns.zarrita);
  return { ours, zarrita, ratios: ratiosOf(ours, zarrita) };
}

/** The page's module: both readers over the served store, bundled for the browser as the viewer is. */
async function pageBundle() {
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    entryPoints: [join(here, "js-peers-page.mjs")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
    // As in the viewer's bundle: numcodecs comes through the import map (zarrita imports it by name too).
    external: ["numcodecs", "numcodecs/*"],
  });
  return result.outputFiles[0].text;
}

/** The page: the viewer's import map (our wasm, numcodecs) with every numcodecs module zarrita may ask for. */
function pageHtml(assetPrefix, codecWasm) {
  const imports = { "@zarr-stream/codecs/zstream_codecs.wasm": `${assetPrefix}${codecWasm}` };
  for (const m of ["blosc", "zstd", "lz4", "gzip", "zlib"])
    imports[`numcodecs/${m}`] = `${assetPrefix}numcodecs/${m}.js`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>js-peers</title>
<script type="importmap">${JSON.stringify({ imports })}</script></head>
<body><script type="module" src="/__bench/page.js"></script></body></html>`;
}

/**
 * Serves the store at `dir` with the viewer's server and opens the bench page in headless Chromium, set up
 * for workload `wl`. Resolves with {page, browser, close}; profile-js-peers.mjs profiles through it too.
 */
export async function openBenchPage(wl, dir) {
  // The viewer is above the writer in the package layers; the bench, a tool outside the package, loads it
  // at run time only (as it runs Python), so the packages keep no import circle.
  const { serveViewer } = await import("@zarr-stream/viewer");
  const { chromium } = await import("playwright-core");
  const js = await pageBundle();
  const server = await serveViewer(dir, { token: null });
  let browser;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    });
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    // The page and its module come from the route, the store and the codecs from the viewer's server:
    // one origin, so both readers fetch as the viewer page does.
    await page.route(`${server.url}__bench/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === "/__bench/page.js") return route.fulfill({ contentType: "text/javascript", body: js });
      return route.fulfill({ contentType: "text/html", body: pageHtml("/__viewer/", "zstream_codecs.wasm") });
    });
    await page.goto(`${server.url}__bench/`);
    await page.waitForFunction(() => globalThis.jsPeers !== undefined, undefined, { timeout: 30_000 });
    const want = wl.vars.map((_, k) => Array.from(new Uint8Array(expectedBox(wl, k).buffer)));
    await page.evaluate(([w, boxes]) => globalThis.jsPeers.setup(w, boxes), [wl, want]);
    const close = async () => {
      await browser.close();
      await server.close();
    };
    return { page, browser, errors, close };
  } catch (e) {
    await browser?.close();
    await server.close();
    throw e;
  }
}

/** The keys of the store's chunk objects (shards) under `dir`, as URL paths below the store. */
function chunkKeys(dir) {
  return storeFiles(dir)
    .map((f) => relative(dir, f).split(sep))
    .filter((parts) => parts[1] === "c")
    .map((parts) => parts.map(encodeURIComponent).join("/"));
}

async function chromiumSide(wl, dir, pairs, log) {
  if (!existsSync(CHROMIUM)) return { error: `${CHROMIUM} is not installed (apt-get install -y chromium)` };
  const { page, browser, errors, close } = await openBenchPage(wl, dir);
  const keys = chunkKeys(dir);
  try {
    const turns = { ours: [], zarrita: [] };
    let fetchOnly;
    for (let i = 0; i < pairs; i++) {
      const order = i % 2 === 0 ? ["ours", "zarrita"] : ["zarrita", "ours"];
      for (const who of order) {
        const r = await page.evaluate((w) => globalThis.jsPeers.turn(w), who);
        r.load_avg = Number(loadavg()[0].toFixed(2));
        turns[who].push(r);
        log(`js-peers chromium ${who} ${i + 1}/${pairs}: ${summary(r)}`);
      }
      // What the page's fetch alone moves (the shards whole, nothing decoded, as many requests in flight
      // as our reader keeps): how near a read-all comes to what this browser's HTTP path carries here.
      const c = await page.evaluate(([k, n]) => globalThis.jsPeers.fetchOnly(k, n), [keys, FETCH_LANES]);
      log(`js-peers chromium fetch only ${i + 1}/${pairs}: ${(c.MBps).toFixed(1)} MB/s of stored bytes`);
      if (fetchOnly === undefined || c.MBps > fetchOnly.MBps) fetchOnly = c;
    }
    if (errors.length > 0) throw new Error(`bench page errors: ${errors.join("; ")}`);
    const ours = bestOf(turns.ours);
    const zarrita = bestOf(turns.zarrita);
    // Read-all moves every stored byte of the shards once: its stored bytes per second beside fetch only.
    const stored_MB = fetchOnly.bytes / MB;
    for (const r of [ours, zarrita])
      r.read_all_stored_MBps = (stored_MB * r.read_all_MBps) / (totalBytes(wl) / MB);
    return {
      browser: browser.version(),
      ours,
      zarrita,
      fetch_only: { stored_MB, stored_MBps: fetchOnly.MBps, lanes: FETCH_LANES },
      ratios: { ...ratiosOf(ours, zarrita), ours_of_fetch_only: ours.read_all_stored_MBps / fetchOnly.MBps },
    };
  } finally {
    await close();
  }
}

function summary(r) {
  return Object.entries(r)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => `${k}=${Number(v.toFixed(2))}`)
    .join(" ");
}

/**
 * Writes the workload's store once (zarr-stream, native codecs) and measures both sides on it.
 * opts: {wl, workDir, pairs, browser (default true), log}. Resolves with the bench JSON's `js_peers`.
 */
export async function runJsPeers(opts) {
  const wl = opts.wl;
  const log = opts.log ?? ((s) => process.stderr.write(`${s}\n`));
  const pairs = opts.pairs ?? 2;
  if (!Number.isInteger(pairs) || pairs < 1)
    throw new RangeError(`js-peers: pairs must be a positive integer, got ${String(opts.pairs)}`);
  mkdirSync(opts.workDir, { recursive: true });
  const wlFile = join(opts.workDir, "js-peers-workload.json");
  writeFileSync(wlFile, JSON.stringify(wl));
  const dir = join(opts.workDir, "js-peers-store");
  const out = { load_avg_start: loadavg(), pairs };
  try {
    out.write = await runNode([join(here, "profile-write.mjs"), wlFile, dir], { ZSTREAM_CODECS: "native" });
    warmPageCache(dir);
    const section = async (name, f) => {
      try {
        out[name] = await f();
      } catch (e) {
        out[name] = { error: e.message };
        log(`js-peers ${name}: FAILED ${e.message.split("\n")[0]}`);
      }
    };
    await section("node", () => nodeSide(wlFile, dir, pairs, log));
    if (opts.browser !== false) await section("chromium", () => chromiumSide(wl, dir, pairs, log));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  out.load_avg_end = loadavg();
  return out;
}

const f = (x, d = 1) => (typeof x === "number" ? x.toFixed(d) : "-");

/** The js-peers section of the report: one row per reader and place, the ratios and the targets. */
export function formatJsPeers(jp) {
  const lines = [`JavaScript peers (same store, turns alternating, best of ${jp.pairs}):`];
  const rows = [["where", "reader", "read all MB/s", "rec warm ms", "rec first ms"]];
  for (const where of ["node", "chromium"]) {
    const s = jp[where];
    if (!s) continue;
    if (s.error) {
      rows.push([where, "FAILED", "", "", ""]);
      continue;
    }
    for (const who of ["ours", "zarrita"])
      rows.push([
        where,
        who === "ours" ? "zarr-stream" : "zarrita.js",
        f(s[who].read_all_MBps),
        f(s[who].read_record_ms, 2),
        f(s[who].first_record_ms, 2),
      ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
  lines.push(...rows.map((r) => r.map((x, c) => String(x).padStart(widths[c])).join("  ")));
  for (const where of ["node", "chromium"]) {
    const s = jp[where];
    if (s?.error) lines.push(`  ${where}: ${s.error.split("\n")[0]}`);
    if (!s?.ratios) continue;
    const r = s.ratios;
    const target = where === "node" ? TARGETS.node_read_all : TARGETS.chromium_read_all;
    lines.push(
      `  [${r.read_all >= target ? "met" : "MISSED"}] ${where}: read-all zarr-stream/zarrita.js ${f(r.read_all, 2)}x (>= ${target}x); record box ${f(r.read_record, 2)}x, first record ${f(r.first_record, 2)}x`,
    );
  }
  const fo = jp.chromium?.fetch_only;
  if (fo)
    lines.push(
      `  chromium fetch only (the ${f(fo.stored_MB, 0)} MB of shards whole, ${fo.lanes} at a time, nothing decoded): ${f(fo.stored_MBps)} MB/s; read-all moves them at ${f(jp.chromium.ours.read_all_stored_MBps)} MB/s (zarr-stream, ${f(100 * jp.chromium.ratios.ours_of_fetch_only, 0)}% of fetch only) and ${f(jp.chromium.zarrita.read_all_stored_MBps)} MB/s (zarrita.js)`,
    );
  lines.push(
    `  load ${jp.load_avg_start?.map((x) => x.toFixed(2)).join("/")} -> ${jp.load_avg_end?.map((x) => x.toFixed(2)).join("/")}`,
  );
  return `${lines.join("\n")}\n`;
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === "worker") return nodeWorker(argv[1], argv[2], argv[3]);
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: "boolean", default: false },
      pairs: { type: "string" },
      "no-browser": { type: "boolean", default: false },
      json: { type: "string" },
    },
  });
  const wl = values.quick ? quickWorkload() : defaultWorkload();
  const workDir = join(tmpdir(), `zs-js-peers-${process.pid}`);
  try {
    const jp = await runJsPeers({
      wl,
      workDir,
      pairs: values.pairs === undefined ? (values.quick ? 1 : 2) : Number(values.pairs),
      browser: !values["no-browser"],
    });
    if (values.json)
      writeFileSync(values.json, `${JSON.stringify({ workload: wl, js_peers: jp }, null, 2)}\n`);
    process.stdout.write(formatJsPeers(jp));
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();

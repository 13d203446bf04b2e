// One OS process of the live-read runs (live-reads.test.ts).
//   node live-child.js write <store-url> <id> <records>   writer <id> of LIVE_WRITERS, a commit per record
//   node live-child.js read <store-url> <seed> <reads>    reads committed records and regions until it has
//                                                          read <reads> records (one variable each), then
//                                                          prints one JSON line of counts
// S3 endpoint and credentials come from the AWS environment variables.
import { openArray, readArrayRegion, readOutputManifestIfPresent, readRecord } from "@zarr-stream/reader";
import { fillGenerated, type OutputManifest, type TypedArray } from "@zarr-stream/spec";
import { openStore, type ReadableStore } from "@zarr-stream/store";
import { StreamRun } from "../src/index.js";
import { boxOf, recordArrays, SEEDS } from "./helpers.js";
import { LIVE_SCHEMA, LIVE_WRITERS, latRows, liveRegion, liveT } from "./live-workload.js";

const [mode, url, idText, countText] = process.argv.slice(2);
if (url === undefined || countText === undefined)
  throw new Error("usage: live-child write <store-url> <id> <records> | read <store-url> <seed> <reads>");
const count = Number(countText);
const say = (line: string) => process.stdout.write(`${line}\n`);

/** `inner` declaring readCost "cheap"; every call, pin included, goes to `inner`. */
function asCheap(inner: ReadableStore): ReadableStore {
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === "readCost") return "cheap";
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A small deterministic generator, so a failing reader's picks can be replayed from its seed. */
function rng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % n;
  };
}

const bytesOf = (a: TypedArray) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

async function readUntil(url: string, seed: number, target: number): Promise<void> {
  // Read as from a cheap store on every backend, as the interleave harness does: the first read of a shard
  // is a 64 KiB window, so its bodies are read apart from its index on S3 too (a 4 MiB window would take
  // these shards whole in one GET, which no rewrite can tear).
  const store = asCheap(openStore(url));
  const pick = rng(seed);
  const counts = {
    recordReads: 0,
    regionReads: 0,
    regionRecords: 0,
    values: 0,
    mismatches: 0,
    errors: 0,
    iterations: 0,
    firstCommitted: -1,
    lastCommitted: -1,
    distinctCommitted: 0,
  };
  const seen = new Set<number>();
  const started = Date.now();
  /** Compares a read with the generator's values bitwise; each differing element counts once. */
  const check = (what: string, got: TypedArray, want: TypedArray) => {
    const g = bytesOf(got);
    const w = bytesOf(want);
    const size = want.BYTES_PER_ELEMENT;
    let bad = g.length === w.length ? 0 : Math.max(want.length, 1);
    const same = bad === 0 && Buffer.compare(g, w) === 0;
    for (let i = 0; !same && bad === 0 && i < w.length; i += size) {
      for (let b = 0; b < size; b++)
        if (g[i + b] !== w[i + b]) {
          bad++;
          break;
        }
    }
    counts.values += want.length;
    if (bad > 0) {
      counts.mismatches += bad;
      process.stderr.write(`mismatch ${what}: ${bad} of ${want.length} values\n`);
    }
  };
  const failed = (what: string, err: unknown) => {
    counts.errors++;
    process.stderr.write(`error ${what}: ${err instanceof Error ? `${err.name}: ${err.message}` : err}\n`);
  };
  /** Every variable of record r; temperature over 1 to 3 lat rows (latRows). */
  const readOne = async (m: OutputManifest, r: number) => {
    const region = { lat: latRows(pick) };
    for (const v of LIVE_SCHEMA.vars) {
      const dims = v.dims.filter((d) => d !== LIVE_SCHEMA.time_dim);
      const box = boxOf(LIVE_SCHEMA, dims, region);
      try {
        const got = await readRecord(store, v.name, r, dims.includes("lat") ? region : undefined, {
          manifest: m,
        });
        counts.recordReads++;
        check(
          `${v.name}[${r}] ${JSON.stringify(box)}`,
          got.data,
          fillGenerated(v.dtype, SEEDS[v.name]!, r, dims, box),
        );
      } catch (err) {
        failed(`readRecord ${v.name}[${r}]`, err);
      }
    }
  };
  /**
   * A box of `name` over records [a, b) ending at the newest or just before it (and for temperature some lat
   * rows, crossing writers' regions), compared record by record in C order. A region read covers several
   * records per shard read, which keeps the read count high on a slow S3 server.
   */
  const readRegion = async (m: OutputManifest, name: string, span: number) => {
    const n = m.n_records;
    const v = LIVE_SCHEMA.vars.find((x) => x.name === name)!;
    const dims = v.dims.filter((d) => d !== LIVE_SCHEMA.time_dim);
    const b = n - pick(Math.min(n, 2));
    const a = Math.max(0, b - 1 - pick(span));
    const box = boxOf(LIVE_SCHEMA, dims, { lat: latRows(pick) });
    const what = `${name}[${a}:${b}] ${JSON.stringify(box)}`;
    try {
      const array = await openArray(store, name);
      const got = await readArrayRegion(store, name, array, [[a, b], ...dims.map((d) => box[d]!)]);
      const per = got.length / (b - a);
      const want = new (got.constructor as new (n: number) => TypedArray)(got.length);
      for (let r = a; r < b; r++)
        (want as Float64Array).set(
          fillGenerated(v.dtype, SEEDS[name]!, r, dims, box) as Float64Array,
          (r - a) * per,
        );
      counts.regionReads++;
      counts.regionRecords += b - a;
      check(what, got, want);
    } catch (err) {
      failed(`readArrayRegion ${what}`, err);
    }
  };
  for (;;) {
    let m: OutputManifest | undefined;
    try {
      m = await readOutputManifestIfPresent(store);
    } catch {
      m = undefined; // the store is still being created
    }
    const n = m?.n_records ?? 0;
    if (m === undefined || n === 0) {
      await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    if (counts.firstCommitted < 0) counts.firstCommitted = n;
    counts.lastCommitted = n;
    seen.add(n);
    counts.iterations++;
    // The newest committed record lives in the open shard the next flush rewrites; the others anywhere.
    await Promise.all([
      readOne(m, n - 1),
      readOne(m, pick(n)),
      readRegion(m, "temperature", 8),
      readRegion(m, "zonal", 16),
      readRegion(m, "total", 16),
    ]);
    if (counts.recordReads + counts.regionRecords >= target) break;
  }
  counts.distinctCommitted = seen.size;
  say(JSON.stringify({ ...counts, ms: Date.now() - started }));
}

// Dispatched last, so the helpers above are initialized when it runs.
if (mode === "write") {
  const id = Number(idText);
  const region = liveRegion(id);
  const run = await StreamRun.open({
    store: url,
    id,
    count: LIVE_WRITERS,
    region,
    schema: LIVE_SCHEMA,
    commitEvery: 1,
    pollMs: 5,
    // A missing token is a failure to show within the test's time, not after the default 10 minutes.
    timeoutMs: 60_000,
  });
  for (let r = run.nextRecord; r < count; r++)
    await run.write(
      liveT(r),
      recordArrays(LIVE_SCHEMA, r, region, (_, partitioned) => partitioned || run.isOwner),
    );
  await run.close();
  say(`done ${id}`);
} else if (mode === "read") {
  await readUntil(url, Number(idText), count);
} else {
  throw new Error(`live-child: unknown mode ${mode}`);
}

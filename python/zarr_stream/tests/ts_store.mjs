#!/usr/bin/env node
// The TypeScript side of the Python package's tests: writes stores with our writer (an owner and 3
// contributors in one process, tokens passed in memory) and dumps what our TypeScript reader reads.
//   node ts_store.mjs write URL append|indexed RECORDS [--uncommitted K] [--ahead M] [--pages]
//   node ts_store.mjs write URL v1 RECORDS   one Single writer, no statics: a v1 manifest
//   node ts_store.mjs dump URL           earthsciio/write-v2-dump/v1 of the committed state (TS reader)
//   node ts_store.mjs live URL RECORDS   commits one record at a time (append mode), a few ms apart
//   node ts_store.mjs mixed-owner URL append|indexed RECORDS COMMITTED   an owner whose contributors'
//                                        tokens arrive as JSON lines on stdin (see mixedOwner)
//   node ts_store.mjs contributor URL append|indexed ID COMMITTED [--blob KEY]   joins, writes, prints its
//                                        token (--blob: one static blob more, so two runs' tokens differ)
//   node ts_store.mjs leases             reads {"tokens": [...], "leases": [base64...]} on stdin; prints the
//                                        TypeScript writer's digest of each token, and of each lease its
//                                        parse, the bytes leaseBytes makes of that, and the next epoch
// Values are seed 000 §10's generator (fillGenerated), so a Python reader can recompute them.
// s3:// URLs take their endpoint and credentials from the AWS_* environment variables.
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { dumpStore } from "@zarr-stream/conformance";
import { fillGenerated } from "@zarr-stream/spec";
import { openStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";

const LAT = 8;
const LON = 6;
const T_SHARD = 4;
export const VARS = [
  { name: "temperature", dims: ["time", "lat", "lon"], dtype: "float64", seed: 1, attrs: { units: "K" } },
  { name: "humidity", dims: ["time", "lat", "lon"], dtype: "float32", seed: 2 },
  { name: "count", dims: ["time", "lat"], dtype: "int32", seed: 3 },
  { name: "big", dims: ["time", "lat", "lon"], dtype: "int64", seed: 4 },
  { name: "flag", dims: ["time"], dtype: "uint8", seed: 5 },
];
const STATICS = [
  { name: "orog", dims: ["lat", "lon"], dtype: "float64", seed: 11, attrs: { units: "m" } },
  { name: "landmask", dims: ["lat"], dtype: "uint8", seed: 12 },
];
/** 2 x 2 writers over lat and lon, each region one shard wide. */
const REGIONS = [
  { lat: [0, 4], lon: [0, 3] },
  { lat: [0, 4], lon: [3, 6] },
  { lat: [4, 8], lon: [0, 3] },
  { lat: [4, 8], lon: [3, 6] },
];
const tOf = (r) => 3600 * r;

function schemaFor(mode, records) {
  return {
    dims: [
      ["time", mode === "indexed" ? records : 0],
      ["lat", LAT],
      ["lon", LON],
    ],
    time_dim: "time",
    time_mode:
      mode === "indexed"
        ? { indexed: { times: Array.from({ length: records }, (_, r) => tOf(r)) } }
        : "append",
    vars: VARS.map(({ seed: _, ...v }) => v),
    statics: STATICS.map(({ seed: _, ...v }) => v),
    chunk_shape: { time: 2, lat: 2, lon: 3 },
    shard_shape: { time: T_SHARD, lat: 4, lon: 3 },
    profile: "diagnostic",
    coords: {
      time: { attrs: { units: "seconds since 2000-01-01 00:00:00", calendar: "standard" } },
      lat: { values: Array.from({ length: LAT }, (_, i) => -70 + 20 * i) },
      lon: { values: Array.from({ length: LON }, (_, i) => 30 * i) },
    },
  };
}

/** The arrays writer `id` supplies for record r: partitioned variables always, replicated ones as owner. */
function arraysFor(id, r) {
  const region = REGIONS[id];
  const out = {};
  for (const v of VARS) {
    const dims = v.dims.filter((d) => d !== "time");
    const partitioned = dims.some((d) => d in region);
    if (!partitioned && id !== 0) continue;
    const box = Object.fromEntries(dims.map((d) => [d, region[d] ?? [0, d === "lat" ? LAT : LON]]));
    out[v.name] = fillGenerated(v.dtype, v.seed, r, dims, box);
  }
  return out;
}

function staticFor(id, s) {
  const region = REGIONS[id];
  return fillGenerated(s.dtype, s.seed, 0, s.dims, Object.fromEntries(s.dims.map((d) => [d, region[d]])));
}

async function openWriters(url, mode, records, pages) {
  const store = () => openStore(url);
  const opts = pages ? { manifestPages: true } : {};
  const owner = await ZarrStreamWriter.create(
    store(),
    schemaFor(mode, records),
    { kind: "owner", nWriters: 4 },
    REGIONS[0],
    opts,
  );
  const writers = [owner];
  for (let id = 1; id < 4; id++)
    writers.push(await ZarrStreamWriter.join(store(), { kind: "contributor", id }, REGIONS[id], opts));
  return writers;
}

async function flushAll(writers) {
  return Promise.all(writers.map((w) => w.flush()));
}

async function commitRound(writers) {
  const tokens = await flushAll(writers);
  await writers[0].commit(tokens);
}

async function write(url, mode, records, flags) {
  const uncommitted = Number(flags["--uncommitted"] ?? 0);
  const ahead = Number(flags["--ahead"] ?? 0);
  const writers = await openWriters(url, mode, records, flags["--pages"] !== undefined);
  for (const [id, w] of writers.entries()) {
    for (const s of STATICS) {
      const partitioned = s.dims.some((d) => d in REGIONS[id]);
      if (!partitioned && id !== 0) continue;
      // landmask lacks lon: every writer supplies it, the lon-0 writers' shards hold it.
      await w.writeStatic(s.name, staticFor(id, s));
    }
    await w.writeBlob("static", "seed.bin", new Uint8Array([id, 1, 2, 3]));
  }
  if (mode === "append") {
    for (let r = 0; r < records; r++) {
      for (const [id, w] of writers.entries()) {
        await w.writeRecord(tOf(r), arraysFor(id, r));
        if (r === 1) await w.writeBlob({ record: 1 }, "rng", new Uint8Array([r, id, 42]));
      }
      if (r % 3 === 2 || r === records - 1) await commitRound(writers);
    }
    // Records written and flushed but never committed: their shards are in the store.
    for (let r = records; r < records + ahead; r++)
      for (const [id, w] of writers.entries()) await w.writeRecord(tOf(r), arraysFor(id, r));
    if (ahead > 0) {
      await flushAll(writers);
      // A zombie owner's refused commit: zarr.json grown, the manifest not (fencing.md).
      const store = openStore(url);
      for (const name of ["time", ...VARS.map((v) => v.name)]) {
        const key = `${name}/zarr.json`;
        const doc = JSON.parse(new TextDecoder().decode(await store.get(key)));
        doc.shape[0] = records + ahead;
        await store.put(key, new TextEncoder().encode(JSON.stringify(doc)));
      }
    }
  } else {
    // Indexed: the committed records in a scrambled order, then `uncommitted` records written and flushed
    // (their shards hold them) but never committed, and the rest never written.
    const committed = records - uncommitted - 2;
    const all = Array.from({ length: committed }, (_, i) => i);
    const order = [...all.filter((r) => r % 2 === 1).reverse(), ...all.filter((r) => r % 2 === 0)];
    for (const [k, r] of order.entries()) {
      for (const [id, w] of writers.entries()) {
        await w.writeRecordAt(r, tOf(r), arraysFor(id, r));
        if (r === 1) await w.writeBlob({ record: 1 }, "rng", new Uint8Array([r, id, 42]));
      }
      // Commits every 3 records (every 60 in a long store, which tests manifest size, not commits).
      if (k % (records > 100 ? 60 : 3) === 2 || k === committed - 1) await commitRound(writers);
    }
    for (let r = committed; r < committed + uncommitted; r++)
      for (const [id, w] of writers.entries()) await w.writeRecordAt(r, tOf(r), arraysFor(id, r));
    if (uncommitted > 0) await flushAll(writers);
  }
}

/** A single writer's append store with no statics: the seed's v1 manifest (§8.1). */
async function writeV1(url, records) {
  const schema = { ...schemaFor("append", 0), statics: [] };
  const w = await ZarrStreamWriter.create(openStore(url), schema, { kind: "single" }, {});
  const whole = Object.fromEntries(
    VARS.map((v) => {
      const dims = v.dims.filter((d) => d !== "time");
      const box = Object.fromEntries(dims.map((d) => [d, [0, d === "lat" ? LAT : LON]]));
      return [v.name, (r) => fillGenerated(v.dtype, v.seed, r, dims, box)];
    }),
  );
  for (let r = 0; r < records; r++) {
    await w.writeRecord(tOf(r), Object.fromEntries(Object.entries(whole).map(([k, f]) => [k, f(r)])));
    if (r % 4 === 3) await w.flush();
  }
  await w.close();
}

/**
 * A TypeScript owner of a store whose contributors are another process's (one JSON line per message on
 * stdin and stdout): creates the store, writes and flushes its own region of records 0..COMMITTED-1 with
 * its statics and blobs, prints {"created": true}; then for each {"tokens": [...]} line commits
 * [own token, ...tokens] and prints {"ok": true, "commit_seq"} or {"ok": false, "error": {name, message,
 * reason}} (reason: a CommitError's, e.g. "stale-token").
 */
async function mixedOwner(url, mode, records, committed) {
  const owner = await ZarrStreamWriter.create(
    openStore(url),
    schemaFor(mode, records),
    { kind: "owner", nWriters: 4 },
    REGIONS[0],
  );
  for (const s of STATICS) await owner.writeStatic(s.name, staticFor(0, s));
  await owner.writeBlob("static", "seed.bin", new Uint8Array([0, 1, 2, 3]));
  for (let r = 0; r < committed; r++) {
    if (mode === "indexed") await owner.writeRecordAt(r, tOf(r), arraysFor(0, r));
    else await owner.writeRecord(tOf(r), arraysFor(0, r));
    if (r === 1) await owner.writeBlob({ record: 1 }, "rng", new Uint8Array([r, 0, 42]));
  }
  const own = await owner.flush();
  const reply = (x) => process.stdout.write(`${JSON.stringify(x)}\n`);
  reply({ created: true });
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    try {
      const receipt = await owner.commit([own, ...JSON.parse(line).tokens]);
      reply({ ok: true, commit_seq: receipt.commit_seq, n_committed: receipt.n_committed });
    } catch (err) {
      reply({ ok: false, error: { name: err.name, message: err.message, reason: err.reason } });
    }
  }
}

/** Contributor `id` of a store another process owns: its region of records 0..COMMITTED-1, statics and blobs; prints its token. */
async function contributor(url, mode, id, committed, extraBlob) {
  const w = await ZarrStreamWriter.join(openStore(url), { kind: "contributor", id }, REGIONS[id]);
  for (const s of STATICS) await w.writeStatic(s.name, staticFor(id, s));
  await w.writeBlob("static", "seed.bin", new Uint8Array([id, 1, 2, 3]));
  if (extraBlob !== undefined) await w.writeBlob("static", extraBlob, new Uint8Array([id]));
  for (let r = 0; r < committed; r++) {
    if (mode === "indexed") await w.writeRecordAt(r, tOf(r), arraysFor(id, r));
    else await w.writeRecord(tOf(r), arraysFor(id, r));
    if (r === 1) await w.writeBlob({ record: 1 }, "rng", new Uint8Array([r, id, 42]));
  }
  process.stdout.write(`${JSON.stringify(await w.flush())}\n`);
}

/** The TypeScript writer's reading of tokens and leases (writer-lease.ts), to compare with Python's. */
async function leases() {
  const lease = await import(
    new URL("../../../packages/writer/dist/src/writer-lease.js", import.meta.url).href
  );
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const out = {
    digests: input.tokens.map((t) => lease.tokenDigest(t)),
    leases: input.leases.map((b64) => {
      const bytes = Buffer.from(b64, "base64");
      const doc = lease.parseLease(bytes);
      return {
        doc: doc ?? null,
        bytes: doc === undefined ? null : Buffer.from(lease.leaseBytes(doc)).toString("base64"),
        next_epoch: lease.newLease(doc?.writer ?? 0, bytes, null).epoch,
      };
    }),
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

async function live(url, records) {
  const writers = await openWriters(url, "append", 0, false);
  for (let r = 0; r < records; r++) {
    for (const [id, w] of writers.entries()) await w.writeRecord(tOf(r), arraysFor(id, r));
    await commitRound(writers);
    console.log(`committed ${r + 1}`);
    await sleep(5);
  }
}

const [cmd, url, ...rest] = process.argv.slice(2);
const flags = {};
for (let i = 0; i < rest.length; i++) {
  if (rest[i].startsWith("--")) {
    flags[rest[i]] = rest[i + 1] !== undefined && !rest[i + 1].startsWith("--") ? rest[++i] : "";
  }
}
if (cmd === "write" && rest[0] === "v1") await writeV1(url, Number(rest[1]));
else if (cmd === "write") await write(url, rest[0], Number(rest[1]), flags);
else if (cmd === "dump") process.stdout.write(`${JSON.stringify(await dumpStore(openStore(url)))}\n`);
else if (cmd === "live") await live(url, Number(rest[0]));
else if (cmd === "contributor")
  await contributor(url, rest[0], Number(rest[1]), Number(rest[2]), flags["--blob"]);
else if (cmd === "leases") await leases();
else if (cmd === "mixed-owner") await mixedOwner(url, rest[0], Number(rest[1]), Number(rest[2]));
else {
  console.error("usage: ts_store.mjs write|dump|live URL ...");
  process.exit(2);
}

// Issue #34, "pages only when asked": a reader that follows only seed 000 §8 (seed_only_reader.py, this
// test's own) refuses every paged manifest we write, whatever way it came to be paged, and reads every
// unpaged one correctly, at 600 and 20,000 records in both time modes. Our reader reads both forms alike.
// The stores are written to memory; the seed-only reader reads output_manifest.json only, so that file
// alone is put on disk for it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { MANIFEST_KEY, readOutputManifest } from "@zarr-stream/reader";
import {
  MANIFEST_PAGE_SIZE,
  OUTPUT_MANIFEST_V2,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifestV2,
  type StreamSchema,
} from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { setManifestPages, ZarrStreamWriter } from "@zarr-stream/writer";

const READER = fileURLToPath(new URL("../../test/seed_only_reader.py", import.meta.url));
const SEED_SCHEMA = fileURLToPath(
  new URL("../../../spec/schemas/output-manifest.schema.json", import.meta.url),
);
const python = findPython({ modules: ["jsonschema"] });

const root = mkdtempSync(join(tmpdir(), "zs-seed-reader-"));
after(() => rmSync(root, { recursive: true, force: true }));

type Mode = "append" | "indexed";
const t = (i: number) => i * 60 + 0.25;
/** Indexed stores leave every seventh record uncommitted, so the committed set is not the whole axis. */
const committedIn = (mode: Mode, n: number) =>
  Array.from({ length: n }, (_, i) => i).filter((i) => mode === "append" || i % 7 !== 3);
/** 600 one-record time shards outgrow a page in append mode; 20,000 records in shards of 8 are 2,500. */
const shardT = (mode: Mode, n: number) => (mode === "append" && n === 600 ? 1 : 8);

function schema(mode: Mode, n: number): StreamSchema {
  const s = shardT(mode, n);
  const times = Array.from({ length: n }, (_, i) => t(i));
  return {
    dims: [
      ["time", 0],
      ["x", 2],
    ],
    time_dim: "time",
    time_mode: mode === "append" ? "append" : { indexed: { times } },
    vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
    statics: [],
    chunk_shape: { time: s, x: 2 },
    shard_shape: { time: s, x: 2 },
    profile: "diagnostic",
  };
}

const owner = { kind: "owner", nWriters: 1 } as const;

/** A store of `n` records of a tiny variable, committed every 2,000 records, unpaged or created paged. */
async function write(mode: Mode, n: number, paged: boolean): Promise<MemoryStore> {
  const store = new MemoryStore();
  const w = await ZarrStreamWriter.create(store, schema(mode, n), owner, {}, { manifestPages: paged });
  let since = 0;
  for (const i of committedIn(mode, n)) {
    const v = { v: Float32Array.of(i, -i) };
    if (mode === "append") await w.writeRecord(t(i), v);
    else await w.writeRecordAt(i, t(i), v);
    if (++since === 2000) {
      await w.commit([await w.flush()]);
      since = 0;
    }
  }
  await w.close();
  return store;
}

async function copyOf(store: MemoryStore): Promise<MemoryStore> {
  const copy = new MemoryStore();
  for (const key of await store.list("")) await copy.put(key, (await store.get(key))!);
  return copy;
}

/** What a correct reader finds in the manifest: count, committed records, times, one entry per time shard. */
function expected(mode: Mode, n: number) {
  const committed = committedIn(mode, n);
  const s = shardT(mode, n);
  const shards: [number, number, number, number][] = [];
  for (const i of committed) {
    const last = shards.at(-1);
    if (last?.[0] === Math.floor(i / s)) {
      last[2] = t(i);
      last[3] += 1;
    } else shards.push([Math.floor(i / s), t(i), t(i), 1]);
  }
  return {
    label: OUTPUT_MANIFEST_V2,
    n_records: n,
    committed,
    times: mode === "indexed" ? Array.from({ length: n }, (_, i) => t(i)) : null,
    last_t: t(committed.at(-1)!),
    shards,
  };
}

interface Case {
  name: string;
  store: MemoryStore;
  mode: Mode;
  n: number;
  paged: boolean;
}

test(
  "a seed-only reader refuses every paged manifest and reads every unpaged one, 600 and 20,000 records, both modes",
  { skip: python.skip },
  async () => {
    const cases: Case[] = [];
    for (const mode of ["append", "indexed"] as const)
      for (const n of [600, 20_000])
        for (const paged of [false, true])
          cases.push({
            name: `${mode}-${n}-${paged ? "paged" : "seed"}`,
            store: await write(mode, n, paged),
            mode,
            n,
            paged,
          });
    // The other ways a manifest comes to be in a form: a form change either way (zstream manifest pages).
    for (const c of cases.filter((c) => c.n === 600)) {
      const store = await copyOf(c.store);
      await setManifestPages(store, !c.paged);
      cases.push({ ...c, name: `${c.name}-switched`, store, paged: !c.paged });
    }
    const manifests: [string, string][] = [];
    for (const c of cases) {
      const text = new TextDecoder().decode(await c.store.get(MANIFEST_KEY));
      const m = JSON.parse(text) as Record<string, unknown> & { records?: object };
      if (c.paged)
        assert.ok(
          "time_shard_pages" in m || "pages" in m.records! || "page_index" in m.records!,
          `${c.name}: its lists are in pages`,
        );
      manifests.push([c.name, text]);
    }
    // A store created paged whose lists all fit inline is paged too (the label is the form, not the size).
    const small = new MemoryStore();
    const w = await ZarrStreamWriter.create(small, schema("append", 5), owner, {}, { manifestPages: true });
    for (let i = 0; i < 5; i++) await w.writeRecord(t(i), { v: Float32Array.of(i, -i) });
    await w.close();
    manifests.push(["small-paged", new TextDecoder().decode(await small.get(MANIFEST_KEY))]);
    // A paged body put under the seed's label by hand: the seed's schema refuses it, the label passes.
    const relabelled = cases.filter((c) => c.paged && !c.name.endsWith("switched"));
    for (const c of relabelled) {
      const m = JSON.parse(manifests.find(([name]) => name === c.name)![1]) as Record<string, unknown>;
      manifests.push([`${c.name}-relabelled`, JSON.stringify({ ...m, schema: OUTPUT_MANIFEST_V2 })]);
    }

    const dirs = manifests.map(([name, text]) => {
      const dir = join(root, `${name}.zarr`);
      mkdirSync(dir);
      writeFileSync(join(dir, "output_manifest.json"), text);
      return dir;
    });
    const run = spawnSync(python.require(), [READER, SEED_SCHEMA], {
      input: JSON.stringify(dirs),
      encoding: "utf8",
      maxBuffer: 256 << 20,
    });
    assert.equal(run.status, 0, run.stderr);
    const verdicts = JSON.parse(run.stdout) as Record<string, unknown>[];
    cases.forEach((c, i) => {
      const got = verdicts[i]!;
      if (c.paged)
        assert.match(String(got.refused), /label 'zarr-stream\/output-manifest\/v2-paged'/, c.name);
      else assert.deepEqual(got, expected(c.mode, c.n), c.name);
    });
    assert.match(String(verdicts[cases.length]!.refused), /^label /, "small-paged");
    relabelled.forEach((c, i) => {
      assert.match(String(verdicts[cases.length + 1 + i]!.refused), /^schema: /, `${c.name}-relabelled`);
    });

    // Our reader: both forms resolve to the same committed state, each keeping its label.
    for (const c of cases) {
      const m = (await readOutputManifest(c.store)) as OutputManifestV2;
      const want = expected(c.mode, c.n);
      assert.ok(c.n > MANIFEST_PAGE_SIZE);
      assert.equal(m.schema, c.paged ? OUTPUT_MANIFEST_V2_PAGED : OUTPUT_MANIFEST_V2, c.name);
      assert.equal(m.n_records, c.n, c.name);
      assert.equal(m.last_t, want.last_t, c.name);
      assert.deepEqual(
        m.time_shards.map((s) => [s.index, s.t_start, s.t_end, s.n]),
        want.shards,
        c.name,
      );
      if (c.mode === "indexed")
        assert.deepEqual(
          m.records!.entries.flatMap((e, i) => (e.committed ? [i] : [])),
          want.committed,
          c.name,
        );
    }
  },
);

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readOutputManifest } from "@zarr-stream/reader";
import type { Region } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, ownerAndContributor, recordArrays } from "./helpers.js";

const python = findPython({ modules: ["numpy", "xarray", "zarr"] });

// Opens the store as a user would (xr.open_zarr, consolidated left to its default) with RuntimeWarning
// an error: xarray warns so when it finds no consolidated metadata. Every other warning is reported.
const OPEN = `
import json, sys, warnings
import xarray as xr
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ds = xr.open_zarr(sys.argv[1], decode_times=False)
    out = {
        "n": int(ds.sizes["time"]),
        "time": [float(x) for x in ds["time"].values],
        "temperature": [[float(x) for x in r.ravel()] for r in ds["temperature"].values],
        "zonal": [[float(x) for x in r.ravel()] for r in ds["zonal"].values],
    }
out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
print(json.dumps(out))
`;

const CONSOLIDATE = `
import sys, warnings, zarr
warnings.simplefilter("ignore")
zarr.consolidate_metadata(sys.argv[1])
`;

function py(script: string, dir: string): string {
  const r = spawnSync(python.require(), ["-W", "error::RuntimeWarning", "-c", script, dir], {
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

const t = (r: number) => 10 * (r + 1);
const mine: Region = { lat: [0, 2] };
const theirs: Region = { lat: [2, 4] };
const owned = (name: string, partitioned: boolean) => partitioned || name !== "temperature";
const contributed = (_: string, partitioned: boolean) => partitioned;

/** xarray's view equals the manifest's committed records, value for value, and it warned of nothing. */
async function assertXarraySeesCommitted(dir: string, store: FsStore, step: string): Promise<number> {
  const m = await readOutputManifest(store);
  const got = JSON.parse(py(OPEN, dir));
  assert.deepEqual(got.warnings, [], step);
  assert.equal(got.n, m.n_records, `${step}: xarray's time length is the committed count`);
  const schema = gridSchema();
  for (let r = 0; r < m.n_records; r++) {
    const want = recordArrays(schema, r, {});
    assert.equal(got.time[r], t(r), `${step}: t of record ${r}`);
    assert.deepEqual(got.temperature[r], [...want.temperature!].map(Number), `${step}: temperature ${r}`);
    assert.deepEqual(got.zonal[r], [...want.zonal!].map(Number), `${step}: zonal ${r}`);
  }
  return m.n_records;
}

describe("plain xarray sees committed records only, through consolidated metadata", () => {
  const root = mkdtempSync(join(tmpdir(), "zs-consolidated-"));
  after(() => rmSync(root, { recursive: true, force: true }));

  it(
    "§1 after every commit of an owner + contributor run, with records written ahead, and after resumes",
    { skip: python.skip },
    async () => {
      const dir = join(root, "run");
      const store = new FsStore(dir);
      const schema = gridSchema();
      const { owner, c } = await ownerAndContributor(store, schema);
      assert.equal(await assertXarraySeesCommitted(dir, store, "create"), 0);
      let next = 0;
      const write = async (n: number) => {
        for (let r = next; r < next + n; r++) {
          await owner.writeRecord(t(r), recordArrays(schema, r, mine, owned));
          await c.writeRecord(t(r), recordArrays(schema, r, theirs, contributed));
        }
        next += n;
      };
      for (const n of [3, 2, 4]) {
        await write(n);
        await owner.commit([await owner.flush(), await c.flush()]);
        assert.equal(await assertXarraySeesCommitted(dir, store, `commit at ${next}`), next);
      }
      // Flushed but not committed: the shards hold two more records, readers are shown none of them.
      await write(2);
      await c.flush();
      await owner.flush();
      assert.equal(await assertXarraySeesCommitted(dir, store, "written ahead"), 9);

      // Resume dropping the records after t(5): shapes and consolidated root shrink before the manifest.
      await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 2 }, mine, t(5));
      assert.equal(await assertXarraySeesCommitted(dir, store, "truncating resume"), 6);

      // The user: consolidates with zarr-python (its own form of the root), then resumes and
      // commits 10 more records; xarray shows every one of them.
      py(CONSOLIDATE, dir);
      const owner2 = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 2 }, mine);
      const c2 = await ZarrStreamWriter.resume(store, { kind: "contributor", id: 1 }, theirs);
      assert.equal(await assertXarraySeesCommitted(dir, store, "resume after consolidate"), 6);
      for (let r = 6; r < 16; r++) {
        await owner2.writeRecord(t(r), recordArrays(schema, r, mine, owned));
        await c2.writeRecord(t(r), recordArrays(schema, r, theirs, contributed));
      }
      await owner2.commit([await owner2.flush(), await c2.flush()]);
      assert.equal(await assertXarraySeesCommitted(dir, store, "10 more records"), 16);
    },
  );
});

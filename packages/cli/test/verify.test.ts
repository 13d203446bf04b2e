import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readArrayLayout } from "@zarr-stream/reader";
import { shardIndexByteLength } from "@zarr-stream/shard";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { SMALL_DEMO, tempDir, zstream } from "./helpers.js";

const python = findPython({ modules: ["zarr"] });

let root: string;
let good: string;

/** A copy of the good store to damage. */
function copy(name: string): string {
  const dir = join(root, name);
  cpSync(good, dir, { recursive: true });
  return dir;
}

function problems(dir: string, ...flags: string[]) {
  const r = zstream("verify", dir, "--json", ...flags);
  const report = JSON.parse(r.stdout) as { ok: boolean; problems: { key: string; problem: string }[] };
  return { status: r.status, report, keys: report.problems.map((p) => p.key) };
}

describe("zstream verify (child process)", () => {
  before(() => {
    root = tempDir("verify");
    good = join(root, "good.zarr");
    const r = zstream("demo", "--out", good, ...SMALL_DEMO, "--json");
    assert.equal(r.status, 0, r.stderr);
    const summary = JSON.parse(r.stdout);
    assert.equal(summary.readback_ok, true);
    assert.equal(summary.records, 12);
    assert.equal(summary.commit_seq, 3);
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("§5.3 a good multi-writer store verifies (exit 0), also --deep", () => {
    for (const flags of [[], ["--deep"]]) {
      const { status, report } = problems(good, ...flags);
      assert.equal(status, 0, JSON.stringify(report.problems));
      assert.equal(report.ok, true);
    }
    const human = zstream("verify", good);
    assert.equal(human.status, 0);
    assert.match(human.stdout, /^OK: /);
  });

  it("§1 one flipped bit in a shard index fails the CRC check and names the key", () => {
    const dir = copy("flip-index.zarr");
    const key = "temperature/c/1/0/1";
    const path = join(dir, key);
    const bytes = readFileSync(path);
    bytes[bytes.length - 10]! ^= 0x04;
    writeFileSync(path, bytes);
    const { status, keys, report } = problems(dir);
    assert.equal(status, 1);
    assert.deepEqual(keys, [key]);
    assert.match(report.problems[0]!.problem, /crc/i);
    const human = zstream("verify", dir);
    assert.equal(human.status, 1);
    assert.ok(human.stdout.includes(`${key}:`), human.stdout);
  });

  it("§1 one flipped bit in a chunk's blosc header (decoded length) is found without --deep", async () => {
    const dir = copy("flip-body.zarr");
    const key = "temperature/c/2/1/0";
    const layout = await readArrayLayout(new FsStore(dir), "temperature");
    const path = join(dir, key);
    const bytes = readFileSync(path);
    const index = bytes.subarray(bytes.length - shardIndexByteLength(layout));
    const first = Number(index.readBigUInt64LE(0));
    bytes[first + 5]! ^= 0x01; // nbytes field, second byte
    writeFileSync(path, bytes);
    const { status, keys, report } = problems(dir);
    assert.equal(status, 1);
    assert.deepEqual(keys, [key]);
    assert.match(report.problems[0]!.problem, /inner chunk 0/);
    assert.equal(problems(dir, "--deep").status, 1);
  });

  it("a committed shard rewritten after its commit (valid bytes no commit published) fails --deep, naming the shard and the commit", () => {
    const dir = copy("rewritten.zarr");
    const key = "temperature/c/0/1/1";
    writeFileSync(join(dir, key), readFileSync(join(dir, "temperature/c/1/1/1")));
    assert.equal(problems(dir).status, 0, "every byte is a valid shard: only the ledger can tell");
    const { status, keys, report } = problems(dir, "--deep");
    assert.equal(status, 1);
    assert.deepEqual(keys, [key]);
    assert.match(report.problems[0]!.problem, /not those commit [0-9]+ published/);
    assert.ok(readdirSync(join(dir, ".zarr-stream/commits")).length > 0, "the commits left ledgers");
  });

  it("§5.3 a deleted committed shard is named as missing", () => {
    const dir = copy("deleted.zarr");
    const key = "temperature/c/0/1/1";
    rmSync(join(dir, key));
    const { status, keys, report } = problems(dir);
    assert.equal(status, 1);
    assert.deepEqual(keys, [key]);
    assert.match(report.problems[0]!.problem, /missing/);
  });

  it("§7 a deleted committed blob and a zarr.json that fails its schema are named", () => {
    const dir = copy("blob-and-meta.zarr");
    rmSync(join(dir, "blobs/record/7/2/rng_state"));
    const meta = join(dir, "land_mask/zarr.json");
    const doc = JSON.parse(readFileSync(meta, "utf8"));
    doc.codecs[0].configuration.index_codecs = [{ name: "bytes", configuration: { endian: "little" } }];
    writeFileSync(meta, JSON.stringify(doc));
    const { status, report } = problems(dir);
    assert.equal(status, 1);
    assert.deepEqual(
      report.problems.map((p) => p.key),
      ["zarr.json", "land_mask/zarr.json", "blobs/record/7/2/rng_state"],
    );
    // The root's consolidated metadata still holds the array's document as written.
    assert.match(report.problems[0]!.problem, /array land_mask is stale: its codecs/);
    assert.match(report.problems[1]!.problem, /index_codecs/);
    assert.match(report.problems[2]!.problem, /missing/);
  });

  it("§8 a manifest edited to claim an extra record disagrees with zarr.json shapes and shards", () => {
    const dir = copy("extra-record.zarr");
    const path = join(dir, "output_manifest.json");
    const m = JSON.parse(readFileSync(path, "utf8"));
    // a consistent-looking edit: count, time dim length, last time shard and last_t all claim record 12
    m.n_records += 1;
    m.dims.find((d: { name: string }) => d.name === "time").length += 1;
    m.time_shards.push({ index: 3, t_start: 43200, t_end: 43200, n: 1 });
    m.last_t = 43200;
    writeFileSync(path, JSON.stringify(m, null, 2));
    const { status, keys } = problems(dir);
    assert.equal(status, 1);
    for (const k of [
      "time/zarr.json",
      "temperature/zarr.json",
      "temperature/c/3/0/0",
      "temperature/c/3/1/1",
    ]) {
      assert.ok(keys.includes(k), `${k} not among ${keys}`);
    }
    // the naive edit (n_records alone) contradicts the manifest's own dims
    const naive = copy("extra-record-naive.zarr");
    const doc = JSON.parse(readFileSync(join(naive, "output_manifest.json"), "utf8"));
    doc.n_records += 1;
    writeFileSync(join(naive, "output_manifest.json"), JSON.stringify(doc));
    const r = problems(naive);
    assert.equal(r.status, 1);
    assert.deepEqual(r.keys, ["output_manifest.json"]);
  });

  it("§8 stale consolidated metadata fails, naming the array and the field; zarr-python's own form passes", () => {
    const dir = copy("consolidated.zarr");
    const path = join(dir, "zarr.json");
    const written = JSON.parse(readFileSync(path, "utf8"));
    assert.deepEqual(Object.keys(written.consolidated_metadata.metadata), [
      "land_mask",
      "lat",
      "lon",
      "temperature",
      "time",
    ]);
    // The user: consolidated at 8 records, then 4 more committed by a writer that left the root.
    const stale = structuredClone(written);
    for (const name of ["temperature", "time"]) stale.consolidated_metadata.metadata[name].shape[0] = 8;
    stale.consolidated_metadata.metadata.land_mask.attributes.flag_meanings = "water ice";
    writeFileSync(path, JSON.stringify(stale, null, 2));
    const { status, keys, report } = problems(dir);
    assert.equal(status, 1);
    assert.deepEqual(keys, ["zarr.json", "zarr.json", "zarr.json"]);
    assert.deepEqual(
      report.problems.map((p) => p.problem.replace(/(: its \w+) is .*/, "$1")),
      [
        "consolidated metadata of array land_mask is stale: its attributes",
        "consolidated metadata of array temperature is stale: its shape",
        "consolidated metadata of array time is stale: its shape",
      ],
    );
    assert.match(
      report.problems[1]!.problem,
      /shape is \[8,36,72\], temperature\/zarr.json has \[12,36,72\]/,
    );
    const human = zstream("verify", dir);
    assert.equal(human.status, 1);
    assert.match(human.stdout, /array temperature is stale: its shape/);

    // An array left out of the root is invisible to readers that use it.
    writeFileSync(path, JSON.stringify(written, null, 2).replace('"lon": {', '"lon_": {'));
    const missing = problems(dir);
    assert.equal(missing.status, 1);
    assert.deepEqual(
      missing.report.problems.map((p) => p.problem),
      [
        "consolidated metadata lacks array lon: readers using it do not see it",
        "consolidated metadata lists lon_, which has no lon_/zarr.json",
      ],
    );
  });

  it(
    "§8 zarr-python's consolidate_metadata spells the same documents its own way: no false alarm",
    {
      skip: python.skip,
    },
    () => {
      const dir = copy("consolidated-by-python.zarr");
      const path = join(dir, "zarr.json");
      const r = spawnSync(
        python.require(),
        ["-W", "ignore", "-c", "import sys, zarr; zarr.consolidate_metadata(sys.argv[1])", dir],
        { encoding: "utf8" },
      );
      assert.equal(r.status, 0, r.stderr);
      const theirs = JSON.parse(readFileSync(path, "utf8"));
      assert.deepEqual(theirs.consolidated_metadata.metadata.time.storage_transformers, []);
      const ok = problems(dir);
      assert.equal(ok.status, 0, JSON.stringify(ok.report.problems));
    },
  );

  it("§8 a manifest that fails its schema is reported against output_manifest.json", () => {
    const dir = copy("bad-manifest.zarr");
    const path = join(dir, "output_manifest.json");
    const m = JSON.parse(readFileSync(path, "utf8"));
    m.commit_seq = "six";
    writeFileSync(path, JSON.stringify(m));
    const { status, keys } = problems(dir);
    assert.equal(status, 1);
    assert.deepEqual(keys, ["output_manifest.json"]);
  });
});

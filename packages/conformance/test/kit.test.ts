import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { ConformanceDump } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import {
  BUNDLED_CORPUS,
  compareDump,
  dumpStore,
  KIT_FILES,
  kitSource,
  loadCorpus,
  oracleDump,
  runConformanceCli,
} from "../src/index.js";

// The driver stands for another binding's: zarr-python and numpy only, jsonschema so that the check
// validates the corpus and every dump with the kit's own schema files.
const pythonProbe = findPython({ modules: ["numpy", "zarr", "jsonschema"] });
const DRIVER = fileURLToPath(new URL("../../test/kit_driver.py", import.meta.url));
const corpus = await loadCorpus(BUNDLED_CORPUS);

interface Ran {
  code: number;
  lines: string[];
  stderr: string;
}

/** Python in isolated mode (-I: no PYTHONPATH, no user site, no script dir magic) from `cwd`. */
function python(cwd: string, args: string[]): Ran {
  const res = spawnSync(pythonProbe.require(), ["-I", ...args], {
    cwd,
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", HOME: cwd },
    maxBuffer: 64 << 20,
  });
  return {
    code: res.status ?? -1,
    lines: res.stdout.split("\n").filter((l) => l !== ""),
    stderr: res.stderr,
  };
}

async function cli(args: string[]): Promise<Ran> {
  const lines: string[] = [];
  const errs: string[] = [];
  const code = await runConformanceCli(args, { stdout: (l) => lines.push(l), stderr: (l) => errs.push(l) });
  return { code, lines, stderr: errs.join("\n") };
}

describe(
  "§10 the conformance kit, run where nothing of this repository is",
  { skip: pythonProbe.skip },
  () => {
    let dir: string;
    let driven: Ran;
    const crosscheck = (...args: string[]) =>
      python(dir, ["kit/crosscheck_write_v2.py", "--corpus", "kit/write_spec_v2.json", ...args]);
    const dumpPath = (name: string) => join("out", name, "dump.json");
    // The flip and failure tests check against three cases only: validating the whole corpus with
    // jsonschema costs a second or more of CPU per run, and what they test does not grow with it.
    const SMALL = ["dtypes", "statics-and-blobs", "pages-indexed-600"];
    const small = (...args: string[]) =>
      python(dir, ["kit/crosscheck_write_v2.py", "--corpus", "small/write_spec_v2.json", ...args]);

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), "zs-kit-"));
      const exported = await cli(["kit", "export", join(dir, "kit")]);
      assert.equal(exported.code, 0, exported.stderr);
      await mkdir(join(dir, "driver"));
      await copyFile(DRIVER, join(dir, "driver", "kit_driver.py"));
      driven = python(dir, ["driver/kit_driver.py", "--corpus", "kit/write_spec_v2.json", "--out", "out"]);
      const doc = JSON.parse(await readFile(join(dir, "kit", "write_spec_v2.json"), "utf8"));
      doc.cases = doc.cases.filter((c: { name: string }) => SMALL.includes(c.name));
      await mkdir(join(dir, "small"));
      await writeFile(join(dir, "small", "write_spec_v2.json"), JSON.stringify(doc));
    });
    after(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    test("§10 kit export copies exactly the kit's files, byte for byte, and refuses a directory with others", async () => {
      assert.deepEqual((await readdir(join(dir, "kit"))).sort(), Object.keys(KIT_FILES).sort());
      for (const name of Object.keys(KIT_FILES))
        assert.deepEqual(await readFile(join(dir, "kit", name)), await readFile(kitSource(name)), name);
      const other = join(dir, "not-empty");
      await mkdir(other);
      await writeFile(join(other, "dump.json"), "{}");
      const refused = await cli(["kit", "export", other]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /holds files that are not the kit's \(dump\.json\)/);
      assert.deepEqual(await readdir(other), ["dump.json"]);
    });

    test("§10 an independent zarr-python driver runs every case, and the kit's crosscheck passes every dump", async () => {
      assert.equal(driven.code, 0, driven.lines.join("\n") + driven.stderr);
      assert.deepEqual(
        driven.lines,
        corpus.cases.map((c) => `ok ${c.name}`),
      );
      // The paged cases were written in the paged form, with pages on disk.
      for (const [name, list, n] of [
        ["pages-append-524", "time_shards", 1],
        ["pages-indexed-600", "records", 2],
      ] as const) {
        const pages = await readdir(join(dir, "out", name, "store", ".zarr-stream", "manifest", list));
        assert.equal(pages.length, n, name);
      }
      // Every store is in the form our reader reads (manifest, fingerprint, pages, arrays): the driver
      // wrote the contract's stores, not a format of its own that only its own reader understands.
      for (const c of corpus.cases) {
        const ours = await dumpStore(new FsStore(join(dir, "out", c.name, "store")), c.name);
        assert.deepEqual(compareDump(oracleDump(c), ours), [], c.name);
      }
      const files = corpus.cases.map((c) => dumpPath(c.name));
      const checked = crosscheck(...files);
      assert.equal(checked.code, 0, checked.lines.join("\n") + checked.stderr);
      assert.deepEqual(
        checked.lines,
        corpus.cases.map((c) => `ok ${c.name} reader=zarr-python (${dumpPath(c.name)})`),
      );
    });

    test("§10 the crosscheck catches one flipped bit of a value and of a blob, naming the case", async () => {
      const read = async (name: string) =>
        JSON.parse(await readFile(join(dir, dumpPath(name)), "utf8")) as ConformanceDump;
      const value = await read("pages-indexed-600");
      const rec = value.records.find((r) => r.index === 511)!;
      const v = rec.vars.v!;
      assert.ok(!("error" in v));
      const bytes = Buffer.from(v.data_b64, "base64");
      bytes[8 * 3] = bytes[8 * 3]! ^ 1; // the lowest mantissa bit of element 3 (x = 3, written by the contributor)
      v.data_b64 = bytes.toString("base64");
      await writeFile(join(dir, "value-flip.json"), JSON.stringify(value));
      const blob = await read("statics-and-blobs");
      const b = blob.blobs.find((x) => x.key === "state.v1")!;
      b.hex = (Number.parseInt(b.hex.slice(0, 2), 16) ^ 0x80).toString(16).padStart(2, "0") + b.hex.slice(2);
      await writeFile(join(dir, "blob-flip.json"), JSON.stringify(blob));

      const checked = small("value-flip.json", dumpPath("pages-indexed-600"), "blob-flip.json");
      assert.equal(checked.code, 1, checked.stderr);
      assert.deepEqual(checked.lines, [
        "FAIL pages-indexed-600 reader=zarr-python (value-flip.json): record 511 var v: element [3] is 229.25000000000003, expected 229.25 (bitwise)",
        `ok pages-indexed-600 reader=zarr-python (${dumpPath("pages-indexed-600")})`,
        "FAIL statics-and-blobs reader=zarr-python (blob-flip.json): blob record 1/writer 1/state.v1: bytes 3eef, expected beef",
      ]);
    });

    test("§10 the crosscheck's main reports every failure kind with one line and exit 1", async () => {
      const baseline = small(dumpPath("dtypes"));
      assert.equal(baseline.code, 0, baseline.stderr);

      const noCorpus = python(dir, [
        "kit/crosscheck_write_v2.py",
        "--corpus",
        "nope.json",
        dumpPath("dtypes"),
      ]);
      assert.equal(noCorpus.code, 1);
      assert.match(noCorpus.stderr, /^crosscheck_write_v2: SchemaError: corpus nope\.json: cannot read/);

      // A corpus the JSON Schema accepts but the oracle cannot use: an indexed record past the time axis.
      const bad = JSON.parse(await readFile(join(dir, "small", "write_spec_v2.json"), "utf8"));
      bad.cases.find((c: { name: string }) => c.name === "pages-indexed-600").expect.records[0].index = 600;
      await writeFile(join(dir, "small", "bad.json"), JSON.stringify(bad));
      const unusable = python(dir, [
        "kit/crosscheck_write_v2.py",
        "--corpus",
        "small/bad.json",
        dumpPath("dtypes"),
      ]);
      assert.equal(unusable.code, 1);
      assert.match(unusable.stderr, /^crosscheck_write_v2: corpus small\/bad\.json: IndexError: /);
      assert.doesNotMatch(unusable.stderr, /Traceback/);

      // The dump schema neither beside the script nor beside the corpus.
      const lone = join(dir, "lone");
      await mkdir(lone);
      await copyFile(join(dir, "kit", "crosscheck_write_v2.py"), join(lone, "crosscheck_write_v2.py"));
      await copyFile(join(dir, "kit", "write_spec_v2.schema.json"), join(lone, "write_spec_v2.schema.json"));
      await copyFile(join(dir, "small", "write_spec_v2.json"), join(lone, "write_spec_v2.json"));
      const noSchema = python(dir, [
        "lone/crosscheck_write_v2.py",
        "--corpus",
        "lone/write_spec_v2.json",
        dumpPath("dtypes"),
      ]);
      assert.equal(noSchema.code, 1);
      assert.match(
        noSchema.stderr,
        /^crosscheck_write_v2: SchemaError: write_v2_dump\.schema\.json is not beside the script or the corpus/,
      );

      // The script alone in its directory finds both schemas beside the corpus.
      for (const f of ["write_spec_v2.schema.json", "write_v2_dump.schema.json"])
        await copyFile(join(dir, "kit", f), join(dir, "small", f));
      const beside = python(dir, [
        "lone/crosscheck_write_v2.py",
        "--corpus",
        "small/write_spec_v2.json",
        dumpPath("dtypes"),
      ]);
      await rm(join(lone, "write_spec_v2.schema.json"));
      const alone = python(dir, [
        "lone/crosscheck_write_v2.py",
        "--corpus",
        "small/write_spec_v2.json",
        dumpPath("dtypes"),
      ]);
      assert.equal(beside.code, 0, beside.stderr);
      assert.equal(alone.code, 0, alone.stderr);
      assert.equal(alone.lines[0], `ok dtypes reader=zarr-python (${dumpPath("dtypes")})`);

      // A dump that is missing or not a dump fails its own line; the others still check.
      await writeFile(
        join(dir, "not-a-dump.json"),
        JSON.stringify({ schema: "earthsciio/write-v2-dump/v1" }),
      );
      const lines = small("absent.json", "not-a-dump.json", dumpPath("dtypes"));
      assert.equal(lines.code, 1);
      assert.match(lines.lines[0]!, /^FAIL absent\.json: FileNotFoundError: /);
      assert.match(
        lines.lines[1]!,
        /^FAIL not-a-dump\.json: SchemaError: earthsciio\/write-v2-dump\/v1: : '\w+' is a required property/,
      );
      assert.equal(lines.lines[2], `ok dtypes reader=zarr-python (${dumpPath("dtypes")})`);
    });
  },
);

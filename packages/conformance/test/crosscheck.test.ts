import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import fc from "fast-check";
import {
  BUNDLED_CORPUS,
  compareDump,
  dumpWithZarrita,
  loadCorpus,
  oracleDump,
  PYTHON_READERS,
  runCase,
  runConformanceCli,
  runPythonReader,
} from "../src/index.js";
import { multiWriterCase, scenarioArb } from "./scenarios.js";

const SEED = Number(process.env.FC_SEED ?? 20261202);

const pythonProbe = findPython({ modules: ["numpy", "zarr", "tensorstore", "earthsciio", "jsonschema"] });

function capture() {
  const lines: string[] = [];
  return {
    lines,
    io: { stdout: (l: string) => lines.push(l), stderr: (l: string) => lines.push(`stderr: ${l}`) },
  };
}

const corpus = await loadCorpus(BUNDLED_CORPUS);
let out: string;

before(async () => {
  out = await mkdtemp(join(tmpdir(), "zs-conformance-"));
});
after(async () => {
  await rm(out, { recursive: true, force: true });
});

describe("§10 crosscheck: write → every reader → check", () => {
  test("§10 every case read by zarr-stream-ts and zarrita matches the oracle bitwise", async () => {
    const { lines, io } = capture();
    const code = await runConformanceCli(["crosscheck", "--corpus", BUNDLED_CORPUS, "--out", out], io);
    assert.equal(code, 0, lines.filter((l) => !l.startsWith("ok ")).join("\n"));
    for (const c of corpus.cases) {
      for (const reader of ["zarr-stream-ts", "zarrita"]) {
        assert.ok(
          lines.some((l) => l.startsWith(`ok ${c.name} reader=${reader} `)),
          `no ok line for ${c.name} / ${reader}`,
        );
      }
    }
  });

  test(
    "§10 zarr-python, TensorStore and earthsciio (one process each) match the oracle bitwise",
    { skip: pythonProbe.skip },
    async () => {
      // Reads the stores the previous test wrote.
      const dumps: string[] = [];
      for (const reader of PYTHON_READERS) {
        const jobs = corpus.cases.map((c) => ({
          store: join(out, c.name, "store"),
          case: c.name,
          out: join(out, c.name, `${reader}.json`),
        }));
        const ran = await runPythonReader(pythonProbe.require(), reader, jobs, out);
        assert.equal(ran.length, corpus.cases.length);
        dumps.push(...jobs.map((j) => j.out));
      }
      const { lines, io } = capture();
      const code = await runConformanceCli(["check", "--corpus", BUNDLED_CORPUS, ...dumps], io);
      assert.equal(code, 0, lines.filter((l) => !l.startsWith("ok ")).join("\n"));
      assert.equal(lines.length, corpus.cases.length * PYTHON_READERS.length);
      for (const c of corpus.cases) {
        for (const reader of PYTHON_READERS) {
          assert.ok(
            lines.some((l) => l.startsWith(`ok ${c.name} reader=${reader} `)),
            `no ok line for ${c.name} / ${reader}`,
          );
        }
      }
    },
  );

  test(
    "§10 the corpus and every dump pass the shipped JSON Schemas in Python (jsonschema, draft 2020-12)",
    { skip: pythonProbe.skip },
    () => {
      const corpusDir = fileURLToPath(new URL("../../corpus/", import.meta.url));
      const dumps = corpus.cases.flatMap((c) =>
        ["dump.json", "zarrita.json", ...PYTHON_READERS.map((r) => `${r}.json`)].map((f) =>
          join(out, c.name, f),
        ),
      );
      const script = `
import json, sys
from jsonschema import Draft202012Validator
d = sys.argv[1]
corpus = Draft202012Validator(json.load(open(d + "write_spec_v2.schema.json")))
dump = Draft202012Validator(json.load(open(d + "write_v2_dump.schema.json")))
corpus.validate(json.load(open(d + "write_spec_v2.json")))
bad = json.load(open(d + "write_spec_v2.json")); bad["cases"][0]["ops"][0]["op"] = "explode"
assert not corpus.is_valid(bad)
for f in sys.argv[2:]:
    dump.validate(json.load(open(f)))
print(len(sys.argv) - 2)
`;
      const res = spawnSync(pythonProbe.require(), ["-c", script, corpusDir, ...dumps], { encoding: "utf8" });
      assert.equal(res.status, 0, res.stderr);
      assert.equal(res.stdout.trim(), String(dumps.length));
    },
  );

  test(
    "§10 random multi-writer stores (fixed seed) read bitwise by zarrita and every Python reader",
    { skip: pythonProbe.skip },
    async () => {
      const samples = fc.sample(scenarioArb, { numRuns: Number(process.env.FC_XRUNS ?? 12), seed: SEED });
      const cases = samples.map((s, i) => ({ ...multiWriterCase(s).c, name: `random-${i}` }));
      const failures: string[] = [];
      for (const c of cases) {
        const dir = join(out, "random", c.name);
        await runCase(c, new FsStore(dir));
        const m = compareDump(oracleDump(c), await dumpWithZarrita(dir, c.name));
        if (m.length > 0) failures.push(`zarrita ${c.name}: ${m[0]}\n${JSON.stringify(c)}`);
      }
      for (const reader of PYTHON_READERS) {
        const jobs = cases.map((c) => ({
          store: join(out, "random", c.name),
          case: c.name,
          out: join(out, "random", `${c.name}.${reader}.json`),
        }));
        await runPythonReader(pythonProbe.require(), reader, jobs, out);
        for (const [i, c] of cases.entries()) {
          const m = compareDump(oracleDump(c), JSON.parse(await readFile(jobs[i]!.out, "utf8")));
          if (m.length > 0) failures.push(`${reader} ${c.name}: ${m[0]}\n${JSON.stringify(c)}`);
        }
      }
      assert.deepEqual(failures, []);
    },
  );

  test("§10 one flipped bit in a committed shard makes check fail naming case, record and variable", async () => {
    const name = "region-tiling";
    assert.equal(
      await runConformanceCli(
        ["write", "--corpus", BUNDLED_CORPUS, "--out", out, "--case", name],
        capture().io,
      ),
      0,
    );
    const store = join(out, name, "store");
    // temperature shard (time 0, lat 0, lon 0): inner chunk 0 is record 0, lat 0, lon 0..2.
    const key = join(store, "temperature/c/0/0/0");
    const shard = new Uint8Array(await readFile(key));
    const nChunks = 2 * 2 * 1;
    const index = new DataView(shard.buffer, shard.byteLength - 4 - nChunks * 16, nChunks * 16);
    const offset = Number(index.getBigUint64(0, true));
    const nbytes = Number(index.getBigUint64(8, true));
    shard[offset + nbytes - 1]! ^= 0x01;
    await writeFile(key, shard);

    for (const reader of ["zarr-stream-ts", "zarrita"]) {
      const dump = join(out, `mutated-${reader}.json`);
      const read = capture();
      const rc = await runConformanceCli(
        [
          "read",
          "--store",
          store,
          "--case",
          name,
          "--corpus",
          BUNDLED_CORPUS,
          "--out",
          dump,
          "--reader",
          reader,
        ],
        read.io,
      );
      assert.equal(rc, 0, read.lines.join("\n"));
      const { lines, io } = capture();
      assert.equal(await runConformanceCli(["check", "--corpus", BUNDLED_CORPUS, dump], io), 1);
      assert.equal(lines.length, 1);
      assert.match(
        lines[0]!,
        new RegExp(`^FAIL ${name} reader=${reader} \\(.*\\): record 0 var temperature: `),
      );
      assert.doesNotMatch(lines[0]!, /record [123] /);
    }
  });

  test("§10 check prints one line per dump and exits 0 only if all match", async () => {
    const { lines, io } = capture();
    const good = join(out, "region-gap", "dump.json");
    const bad = join(out, "bad.json");
    const d = JSON.parse(await readFile(good, "utf8"));
    d.commit_seq = 99;
    await writeFile(bad, JSON.stringify(d));
    assert.equal(await runConformanceCli(["check", "--corpus", BUNDLED_CORPUS, good, good], io), 0);
    assert.equal(lines.length, 2);
    assert.equal(await runConformanceCli(["check", "--corpus", BUNDLED_CORPUS, good, bad], capture().io), 1);
    const second = capture();
    await runConformanceCli(["check", "--corpus", BUNDLED_CORPUS, bad], second.io);
    assert.deepEqual(second.lines, [
      `FAIL region-gap reader=zarr-stream-ts (${bad}): commit_seq 99, expected 2`,
    ]);
  });

  test("§10 CLI: usage errors and missing inputs exit 2 naming the file, unreadable dumps fail the check (1)", async () => {
    const usage = capture();
    assert.equal(await runConformanceCli(["write", "--corpus", BUNDLED_CORPUS], usage.io), 2);
    assert.match(usage.lines[0]!, /--out is required/);
    assert.equal(await runConformanceCli(["frobnicate"], capture().io), 2);
    const missing = capture();
    assert.equal(await runConformanceCli(["check", "--corpus", join(out, "nope.json"), "x"], missing.io), 2);
    assert.match(missing.lines[0]!, /--corpus .*nope\.json does not exist/);
    const noDump = capture();
    assert.equal(
      await runConformanceCli(["check", "--corpus", BUNDLED_CORPUS, join(out, "nope.json")], noDump.io),
      2,
    );
    assert.match(noDump.lines[0]!, /DUMP .*nope\.json does not exist/);
    const notDump = join(out, "not-a-dump.json");
    await writeFile(notDump, JSON.stringify({ schema: "something/else" }));
    const bad = capture();
    assert.equal(await runConformanceCli(["check", "--corpus", BUNDLED_CORPUS, notDump], bad.io), 1);
    assert.match(
      bad.lines[0]!,
      /^FAIL .*not-a-dump\.json: SchemaError: earthsciio\/write-v2-dump\/v1: \/: must have required property/,
    );
  });
});

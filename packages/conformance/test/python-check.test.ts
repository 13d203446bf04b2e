import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { ConformanceDump, DumpArray } from "@zarr-stream/spec";
import { findPython } from "@zarr-stream/test-support/python";
import fc from "fast-check";
import { BUNDLED_CORPUS, dumpWithZarrita, loadCorpus, runConformanceCli } from "../src/index.js";

const pythonProbe = findPython({ modules: ["numpy"] });
const CROSSCHECK = fileURLToPath(new URL("../../python/crosscheck_write_v2.py", import.meta.url));
const SEED = Number(process.env.FC_SEED ?? 20261202);

function runPythonCheck(args: string[]): { code: number; lines: string[]; stderr: string } {
  const res = spawnSync(pythonProbe.require(), [CROSSCHECK, ...args], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  return {
    code: res.status ?? -1,
    lines: res.stdout.split("\n").filter((l) => l !== ""),
    stderr: res.stderr,
  };
}

async function runTsCheck(args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const io = { stdout: (l: string) => lines.push(l), stderr: (l: string) => lines.push(`stderr: ${l}`) };
  const code = await runConformanceCli(["check", ...args], io);
  return { code, lines };
}

/** Flips one bit of element `element` of a dumped array (its lowest byte). */
function flipBit(a: DumpArray, element: number, bit: number): void {
  if ("error" in a) return;
  const bytes = Buffer.from(a.data_b64, "base64");
  const size =
    bytes.length /
    Math.max(
      1,
      a.shape.reduce((n, d) => n * d, 1),
    );
  bytes[(element * size) % Math.max(1, bytes.length)]! ^= 1 << bit;
  a.data_b64 = bytes.toString("base64");
}

/** Ways a reader can get a store wrong, each applied to a copy of a correct dump. */
const CORRUPTIONS: Record<string, (d: ConformanceDump) => void> = {
  "bit flip": (d) => {
    const r = d.records.at(-1);
    if (r) flipBit(Object.values(r.vars)[0]!, 3, 0);
    else d.commit_seq = 99;
  },
  "t off by one ulp": (d) => {
    const r = d.records[0];
    if (r) r.t = r.t === 0 ? Number.MIN_VALUE : r.t * (1 + Number.EPSILON);
  },
  "record dropped": (d) => {
    d.records.pop();
  },
  "record added": (d) => {
    d.records.push({ ...structuredClone(d.records[0]!), index: 1000 });
  },
  commit_seq: (d) => {
    d.commit_seq = d.commit_seq === null ? 1 : null;
  },
  "dtype and shape": (d) => {
    const vars = d.records[0]?.vars;
    const [first, second] = vars ? Object.values(vars) : [];
    if (first && !("error" in first)) first.dtype = first.dtype === "float64" ? "float32" : "float64";
    if (second && !("error" in second)) second.shape = [...second.shape, 1];
  },
  "reader error": (d) => {
    const r = d.records[0];
    if (r) r.vars[Object.keys(r.vars)[0]!] = { error: "OSError: shard object missing" };
  },
  "blob bytes and extra static": (d) => {
    d.blobs.push({ scope: { record: 0 }, writer: 7, key: "stray", hex: "00ff" });
    d.statics.stray = { dtype: "uint8", shape: [1], data_b64: "AA==" };
  },
  "manifest label and field": (d) => {
    d.manifest_schema = "earthsciio/output-manifest/v3";
    if (d.manifest) d.manifest.n_records = Number(d.manifest.n_records) + 1;
  },
  "many mismatches": (d) => {
    for (const r of d.records) for (const a of Object.values(r.vars)) flipBit(a, 0, 7);
  },
};

/** Dumps that are not valid dumps: each check names the file and fails it. */
const INVALID: Record<string, (d: ConformanceDump) => unknown> = {
  "no records": (d) => {
    const { records: _r, ...rest } = d;
    return rest;
  },
  "unknown case": (d) => ({ ...d, case: "no-such-case" }),
  "wrong label": (d) => ({ ...d, schema: "earthsciio/write-v2-dump/v0" }),
};

const corpus = await loadCorpus(BUNDLED_CORPUS);
let out: string;
/** Correct dumps of every case: ours and zarrita's. */
const good: string[] = [];

before(async () => {
  out = await mkdtemp(join(tmpdir(), "zs-pycheck-"));
  const lines: string[] = [];
  const io = { stdout: (l: string) => lines.push(l), stderr: (l: string) => lines.push(l) };
  const code = await runConformanceCli(["write", "--corpus", BUNDLED_CORPUS, "--out", out], io);
  assert.equal(code, 0, lines.join("\n"));
  for (const c of corpus.cases) {
    const zarrita = join(out, c.name, "zarrita.json");
    await writeFile(zarrita, JSON.stringify(await dumpWithZarrita(join(out, c.name, "store"), c.name)));
    good.push(join(out, c.name, "dump.json"), zarrita);
  }
});
after(async () => {
  await rm(out, { recursive: true, force: true });
});

describe("§10 conformance/crosscheck_write_v2.py: the check in Python agrees with the TypeScript check", () => {
  test(
    "§10 on the correct dumps of all 24 cases (ours and zarrita's) both print the same ok lines",
    { skip: pythonProbe.skip },
    async () => {
      assert.equal(corpus.cases.length, 24);
      const ts = await runTsCheck(["--corpus", BUNDLED_CORPUS, ...good]);
      const py = runPythonCheck(["--corpus", BUNDLED_CORPUS, ...good]);
      assert.equal(ts.code, 0, ts.lines.join("\n"));
      assert.equal(py.code, 0, py.lines.join("\n") + py.stderr);
      assert.equal(py.lines.filter((l) => l.startsWith("ok ")).length, good.length);
      assert.deepEqual(py.lines, ts.lines);
    },
  );

  test(
    "§10 on corrupted dumps (every corruption on every case) both print the same FAIL lines, verbatim",
    { skip: pythonProbe.skip },
    async () => {
      const files: string[] = [];
      for (const c of corpus.cases) {
        const dump = JSON.parse(await readFile(join(out, c.name, "dump.json"), "utf8")) as ConformanceDump;
        for (const [i, [kind, corrupt]] of Object.entries(CORRUPTIONS).entries()) {
          const bad = structuredClone(dump);
          corrupt(bad);
          const file = join(out, c.name, `corrupt-${i}.json`);
          await writeFile(file, JSON.stringify(bad));
          files.push(file);
          assert.notDeepEqual(bad, dump, `${kind} changes ${c.name}`);
        }
      }
      const ts = await runTsCheck(["--corpus", BUNDLED_CORPUS, ...files]);
      const py = runPythonCheck(["--corpus", BUNDLED_CORPUS, ...files]);
      assert.equal(ts.code, 1);
      assert.equal(py.code, 1, py.stderr);
      assert.equal(ts.lines.length, files.length);
      assert.equal(ts.lines.filter((l) => l.startsWith("FAIL ")).length, files.length, ts.lines.join("\n"));
      assert.deepEqual(py.lines, ts.lines);
    },
  );

  test(
    "§10 on documents that are not dumps both fail the file (the reasons are each checker's own)",
    { skip: pythonProbe.skip },
    async () => {
      const dump = JSON.parse(await readFile(good[0]!, "utf8")) as ConformanceDump;
      const files: string[] = [];
      for (const [i, make] of Object.values(INVALID).entries()) {
        const file = join(out, `invalid-${i}.json`);
        await writeFile(file, JSON.stringify(make(structuredClone(dump))));
        files.push(file);
      }
      const notJson = join(out, "not-json.json");
      await writeFile(notJson, "{ nope");
      files.push(notJson, good[1]!);
      const ts = await runTsCheck(["--corpus", BUNDLED_CORPUS, ...files]);
      const py = runPythonCheck(["--corpus", BUNDLED_CORPUS, ...files]);
      assert.equal(ts.code, 1);
      assert.equal(py.code, 1, py.stderr);
      const verdict = (l: string) => l.split(":")[0];
      assert.deepEqual(py.lines.map(verdict), ts.lines.map(verdict));
      assert.deepEqual(ts.lines.map(verdict), [
        ...files.slice(0, -1).map((f) => `FAIL ${f}`),
        ts.lines.at(-1)!.split(":")[0],
      ]);
      assert.match(ts.lines.at(-1)!, /^ok /);
    },
  );

  test(
    "§10 property: random bit flips in random cases and records get the same verdict line (fixed seed)",
    { skip: pythonProbe.skip },
    async () => {
      const dumps = await Promise.all(
        corpus.cases.map(
          async (c) => JSON.parse(await readFile(join(out, c.name, "dump.json"), "utf8")) as ConformanceDump,
        ),
      );
      const withData = dumps.filter((d) => d.records.length > 0);
      const flips = fc.sample(
        fc.record({
          d: fc.nat(withData.length - 1),
          r: fc.nat(),
          v: fc.nat(),
          e: fc.nat(1000),
          bit: fc.nat(7),
        }),
        { numRuns: Number(process.env.FC_RUNS ?? 60), seed: SEED },
      );
      const files: string[] = [];
      for (const [i, f] of flips.entries()) {
        const bad = structuredClone(withData[f.d]!);
        const rec = bad.records[f.r % bad.records.length]!;
        const vars = Object.values(rec.vars);
        flipBit(vars[f.v % vars.length]!, f.e, f.bit);
        const file = join(out, `flip-${i}.json`);
        await writeFile(file, JSON.stringify(bad));
        files.push(file);
      }
      const ts = await runTsCheck(["--corpus", BUNDLED_CORPUS, ...files]);
      const py = runPythonCheck(["--corpus", BUNDLED_CORPUS, ...files]);
      assert.equal(py.code, ts.code, py.stderr);
      assert.deepEqual(py.lines, ts.lines);
    },
  );

  test(
    "§10 the Python check takes t from the ops when a corpus gives none, and refuses a bad corpus",
    { skip: pythonProbe.skip },
    async () => {
      const letter = structuredClone(corpus);
      for (const c of letter.cases) for (const r of c.expect.records) delete r.t;
      const file = join(out, "letter.json");
      await writeFile(file, JSON.stringify(letter));
      const py = runPythonCheck(["--corpus", file, ...good]);
      assert.equal(py.code, 0, py.lines.join("\n") + py.stderr);
      const broken = structuredClone(letter);
      broken.cases[0]!.expect.records[0]!.r = 99;
      await writeFile(file, JSON.stringify(broken));
      const refused = runPythonCheck(["--corpus", file, ...good]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /generator record 99 is written at 0 t values: the case must give t/);
    },
  );

  test(
    "§10 zstream conformance crosscheck --python runs the Python check on every reader's dumps and requires our lines",
    { skip: pythonProbe.skip },
    async () => {
      const few = {
        ...corpus,
        cases: corpus.cases.filter((c) =>
          ["dtypes", "statics-and-blobs", "manifest-v1-compat"].includes(c.name),
        ),
      };
      const dir = join(out, "cli");
      const file = join(out, "few.json");
      await writeFile(file, JSON.stringify(few));
      const lines: string[] = [];
      const io = { stdout: (l: string) => lines.push(l), stderr: (l: string) => lines.push(`stderr: ${l}`) };
      const code = await runConformanceCli(
        ["crosscheck", "--corpus", file, "--out", dir, "--python", pythonProbe.require()],
        io,
      );
      assert.equal(code, 0, lines.join("\n"));
      assert.equal(lines.at(-1), "crosscheck_write_v2.py agrees on all 15 dumps");
    },
  );

  test(
    "§10 property: the Python check prints numbers exactly as JavaScript does (Number to String)",
    { skip: pythonProbe.skip },
    () => {
      const xs = fc.sample(fc.double({ noNaN: true }), { numRuns: 2000, seed: SEED });
      xs.push(0, 3600, 1e21, 1e-7, 123e-20, 2 ** 53, 1029.2500000000002, -1.5);
      const bits = xs.map((x) => {
        const b = Buffer.alloc(8);
        b.writeDoubleLE(x);
        return b.toString("hex");
      });
      const script = `
import json, struct, sys
sys.path.insert(0, sys.argv[1])
from crosscheck_write_v2 import js_number
print(json.dumps([js_number(struct.unpack("<d", bytes.fromhex(h))[0]) for h in json.load(sys.stdin)]))
`;
      const res = spawnSync(
        pythonProbe.require(),
        ["-c", script, fileURLToPath(new URL("../../python/", import.meta.url))],
        {
          input: JSON.stringify(bits),
          encoding: "utf8",
        },
      );
      assert.equal(res.status, 0, res.stderr);
      assert.deepEqual(JSON.parse(res.stdout), xs.map(String));
    },
  );
});

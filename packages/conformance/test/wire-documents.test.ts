import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { CommitToken } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { BUNDLED_CORPUS, dumpStore, loadCorpus, runCase } from "../src/index.js";

const pythonProbe = findPython({ modules: ["jsonschema"] });
const SCHEMAS = fileURLToPath(new URL("../../../spec/schemas/", import.meta.url));

const corpus = await loadCorpus(BUNDLED_CORPUS);
let out: string;
/** [schema file, document file] for every wire document the corpus run writes. */
const jobs: [string, string][] = [];

before(async () => {
  out = await mkdtemp(join(tmpdir(), "zs-wire-"));
  jobs.push(["write-conformance-spec-v2.schema.json", BUNDLED_CORPUS]);
  for (const c of corpus.cases) {
    const dir = join(out, c.name);
    const tokens: CommitToken[] = [];
    const store = new FsStore(join(dir, "store"));
    await runCase(c, store, { onToken: (t) => tokens.push(t) });
    const manifest = join(dir, "store", "output_manifest.json");
    const label = JSON.parse(await readFile(manifest, "utf8")).schema as string;
    // A paged manifest has its own label and schema; the seed's schemas refuse it by design
    // (docs/manifest-pages.md), which seed-only-reader.test checks.
    if (label === "zarr-stream/output-manifest/v2-paged")
      jobs.push(["output-manifest-v2-paged.schema.json", manifest]);
    else {
      jobs.push(["output-manifest.schema.json", manifest]);
      jobs.push([
        label.endsWith("/v1") ? "output-manifest-v1.schema.json" : "output-manifest-v2.schema.json",
        manifest,
      ]);
    }
    const dump = join(dir, "dump.json");
    await writeFile(dump, JSON.stringify(await dumpStore(store, c.name)));
    jobs.push(["write-v2-dump.schema.json", dump]);
    for (const [i, t] of tokens.entries()) {
      const file = join(dir, `token-${i}.json`);
      await writeFile(file, JSON.stringify(t));
      jobs.push(["commit-token.schema.json", file]);
    }
  }
});
after(async () => {
  await rm(out, { recursive: true, force: true });
});

test(
  "Python jsonschema validates every wire document a corpus run writes with the shipped schema files, and rejects broken ones",
  { skip: pythonProbe.skip },
  () => {
    const kinds = new Set(jobs.map(([s]) => s));
    assert.equal(kinds.size, 7, [...kinds].join(", "));
    assert.ok(jobs.filter(([s]) => s === "commit-token.schema.json").length >= corpus.cases.length);
    // Each broken copy changes one field the schema states: the validator must refuse it.
    const script = `
import json, sys
from jsonschema import Draft202012Validator
schemas, jobs = sys.argv[1], json.load(sys.stdin)
def broken(doc):
    bad = json.loads(json.dumps(doc))
    if "cases" in bad: bad["cases"][0]["ops"][0]["op"] = "explode"
    elif "records" in bad and "objects" in bad: bad["records"].append({"index": -1, "t": 0})
    elif "n_records" in bad: bad["n_records"] = -1
    else: del bad["records"]
    return bad
valid = invalid = 0
for schema, file in jobs:
    v = Draft202012Validator(json.load(open(schemas + schema)))
    doc = json.load(open(file))
    errors = [e.message for e in v.iter_errors(doc)]
    if errors: raise SystemExit(f"{file} against {schema}: {errors[:3]}")
    valid += 1
    if v.is_valid(broken(doc)): raise SystemExit(f"a broken copy of {file} passes {schema}")
    invalid += 1
print(json.dumps([valid, invalid]))
`;
    const res = spawnSync(pythonProbe.require(), ["-c", script, SCHEMAS], {
      input: JSON.stringify(jobs),
      encoding: "utf8",
    });
    assert.equal(res.status, 0, res.stderr + res.stdout);
    assert.deepEqual(JSON.parse(res.stdout), [jobs.length, jobs.length]);
  },
);

// writer-decisions.md rule 22: -0 is refused wherever a time enters, checked against Python's json, which
// writes -0.0 and reads it back as -0.0, while JavaScript writes -0 as 0.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findPython, runPython } from "@zarr-stream/test-support/python";
import { SchemaError, validateCommitToken, validateOutputManifest } from "../src/index.js";
import { manifestV2 } from "./examples.js";

const probe = findPython({ modules: ["json"] });

const TOKEN = {
  schema: "earthsciio/commit-token/v1",
  writer: 1,
  region: { lat: [2, 4] },
  fingerprint: `sha256:${"0".repeat(64)}`,
  records: [{ index: 0, t: 0.0 }],
  statics: [],
  blobs: [],
  objects: [],
};

/** What Python's json makes of `doc` with record 0's t set to -0.0. */
function pythonWithNegativeZero(doc: object, set: string): string {
  return runPython(
    probe.require(),
    `import json, sys\nd = json.loads(sys.stdin.read())\n${set}\nprint(json.dumps(d))`,
    JSON.stringify(doc),
  );
}

describe("-0 as a time (rule 22)", { skip: probe.skip }, () => {
  it("Python writes -0.0 and reads it back as -0.0; JavaScript writes it as 0, so it cannot round-trip", () => {
    const text = runPython(probe.require(), "import json; print(json.dumps([-0.0, json.loads('-0.0')]))");
    assert.equal(text.trim(), "[-0.0, -0.0]");
    assert.ok(Object.is(JSON.parse("-0.0"), -0), "JSON.parse keeps the sign");
    assert.equal(JSON.stringify(-0), "0", "JSON.stringify drops it");
  });

  it("a token Python wrote with t = -0.0 is a SchemaError at /records/0/t; t = 0.0 passes", () => {
    const text = pythonWithNegativeZero(TOKEN, "d['records'][0]['t'] = -0.0");
    assert.match(text, /"t": -0\.0/);
    assert.throws(
      () => validateCommitToken(JSON.parse(text)),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/records/0/t" && /-0/.test(e.message),
    );
    assert.doesNotThrow(() => validateCommitToken(JSON.parse(pythonWithNegativeZero(TOKEN, "pass"))));
  });

  it("a manifest Python wrote with last_t or a time shard's t_start = -0.0 is refused, naming the field", () => {
    const manifest = manifestV2;
    for (const [set, pointer] of [
      ["d['last_t'] = -0.0", "/last_t"],
      ["d['time_shards'][0]['t_start'] = -0.0", "/time_shards/0/t_start"],
    ]) {
      const doc = JSON.parse(pythonWithNegativeZero(manifest, set!));
      assert.throws(
        () => validateOutputManifest(doc),
        (e: unknown) => e instanceof SchemaError && e.pointer === pointer && /-0/.test(e.message),
        set,
      );
    }
  });
});

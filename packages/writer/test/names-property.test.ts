// Seed §3 names as store keys: any schema that validates creates a store on a file system, and any schema
// that fails validation is refused before any I/O, leaving the target path absent (issue "Faults and
// hostile inputs at the edges").
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { SchemaError, type StreamSchema, validateStreamSchema } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import fc from "fast-check";
import { ZarrStreamWriter } from "../src/index.js";

const RUNS = Number(process.env.FC_RUNS ?? 300);
const SEED = Number(process.env.FC_SEED ?? 20261205);
const roots = tempRoots("names");

const pieces = [
  "a",
  "T",
  "t",
  "_",
  "-",
  ".",
  "..",
  "/",
  "\\",
  "\0",
  "\n",
  " ",
  "é",
  "__",
  "con",
  "blobs",
  "zarr.json",
  ".zs-tmp-",
];
const names = fc.array(fc.constantFrom(...pieces), { minLength: 0, maxLength: 4 }).map((p) => p.join(""));

function schemaOf(dim: string, variable: string, other: string): StreamSchema {
  return {
    dims: [
      ["time", 0],
      [dim, 4],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [
      { name: variable, dims: ["time", dim], dtype: "float64" },
      { name: other, dims: ["time"], dtype: "float32" },
    ],
    statics: [],
    chunk_shape: { time: 1, [dim]: 2 },
    shard_shape: { time: 2, [dim]: 4 },
    profile: "diagnostic",
  };
}

describe("names: validation decides, before any I/O", () => {
  it(`a schema that validates creates a store; one that does not leaves the path absent (${RUNS} runs)`, async () => {
    let created = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(names, names, names, async (dim, variable, other) => {
        const schema = schemaOf(dim, variable, other);
        const dir = join(roots.fresh(), "store");
        let valid = true;
        try {
          validateStreamSchema(structuredClone(schema));
        } catch (e) {
          assert.ok(e instanceof SchemaError, String(e));
          valid = false;
        }
        if (valid) {
          const w = await ZarrStreamWriter.create(new FsStore(dir), schema, { kind: "single" });
          await w.close();
          created++;
        } else {
          await assert.rejects(
            ZarrStreamWriter.create(new FsStore(dir), schema, { kind: "single" }),
            SchemaError,
          );
          assert.equal(existsSync(dir), false, `a refused schema left ${dir}`);
          refused++;
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
    assert.ok(created > 0 && refused > 0, `both outcomes drawn: ${created} created, ${refused} refused`);
  });
});

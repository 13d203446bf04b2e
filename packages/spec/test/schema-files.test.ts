import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { findPython, runPython } from "@zarr-stream/test-support/python";
import { Ajv2020 } from "ajv/dist/2020.js";
import {
  MANIFEST_PAGE_SIZE,
  OUTPUT_MANIFEST_V2,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifestV2,
  pageManifest,
  SCHEMA_FILES,
  schemaFileText,
} from "../src/index.js";
import { manifestV1, manifestV2, schema, token, zarrArray } from "./examples.js";

const dir = fileURLToPath(new URL("../../schemas/", import.meta.url));
const python = findPython({ modules: ["jsonschema"] });

/** manifestV2 with `n` records, paged: its records in pages, `records.pages` in the manifest. */
function pagedV2(n: number): OutputManifestV2 {
  const entries = Array.from({ length: n }, (_, i) => ({ committed: i % 2 === 0, t: i, generation: 1 }));
  return pageManifest({
    ...manifestV2,
    schema: OUTPUT_MANIFEST_V2_PAGED,
    dims: manifestV2.dims.map((d) => (d.name === manifestV2.time_dim ? { ...d, length: n } : d)),
    n_records: n,
    time_shards: [],
    blobs: [],
    records: { entries },
  }).manifest;
}
const paged = pagedV2(MANIFEST_PAGE_SIZE + 1);

/** Example documents and the schema file each must pass; a broken copy of each must fail. */
const EXAMPLES: [string, string, unknown][] = [
  ["output manifest v2-paged", "output-manifest-v2-paged.schema.json", paged],
  [
    "output manifest v2-paged, inline",
    "output-manifest-v2-paged.schema.json",
    {
      ...manifestV2,
      schema: OUTPUT_MANIFEST_V2_PAGED,
    },
  ],
  ["output manifest v1", "output-manifest.schema.json", manifestV1],
  ["output manifest v2", "output-manifest.schema.json", manifestV2],
  ["output manifest v1", "output-manifest-v1.schema.json", manifestV1],
  ["output manifest v2", "output-manifest-v2.schema.json", manifestV2],
  ["commit token", "commit-token.schema.json", token],
  ["stream schema", "stream-schema.schema.json", schema],
  ["region", "region.schema.json", { lat: [0, 2] }],
  ["zarr array", "zarr-array.schema.json", zarrArray],
  ["zarr group", "zarr-group.schema.json", { zarr_format: 3, node_type: "group", attributes: {} }],
];

/**
 * Documents a file must refuse although only their label differs from a valid one: a paged body under
 * the seed's v2 label, which a reader of the seed's schemas would otherwise misread (its lists are tails).
 */
const REFUSED: [string, string, unknown][] = [
  ["paged body, seed label", "output-manifest.schema.json", { ...paged, schema: OUTPUT_MANIFEST_V2 }],
  ["paged body, seed label", "output-manifest-v2.schema.json", { ...paged, schema: OUTPUT_MANIFEST_V2 }],
  ["paged label", "output-manifest.schema.json", paged],
];

/** One field broken in a way the schema states (a wrong label, a negative count, a stray key). */
function broken(doc: unknown): unknown {
  const copy = structuredClone(doc) as Record<string, unknown>;
  if ("schema" in copy && typeof copy.schema === "string") copy.schema = `${copy.schema}-typo`;
  else copy.__unexpected__ = [-1];
  return copy;
}

describe("schemas/*.schema.json", () => {
  test("every shipped file is what the build generates from the TypeScript schemas, and no other", async () => {
    const onDisk = (await readdir(dir)).filter((f) => f.endsWith(".schema.json")).sort();
    assert.deepEqual(onDisk, Object.keys(SCHEMA_FILES).sort());
    for (const name of onDisk)
      assert.equal(await readFile(`${dir}${name}`, "utf8"), schemaFileText(name), name);
  });

  test("Ajv (draft 2020-12, strict) compiles each file; examples pass and broken copies fail", () => {
    const ajv = new Ajv2020({ strict: true });
    for (const [what, file, doc] of EXAMPLES) {
      const validate = ajv.getSchema(SCHEMA_FILES[file]!.$id as string) ?? ajv.compile(SCHEMA_FILES[file]!);
      assert.equal(validate(doc), true, `${what} against ${file}: ${JSON.stringify(validate.errors)}`);
      assert.equal(validate(broken(doc)), false, `broken ${what} against ${file}`);
    }
    for (const [what, file, doc] of REFUSED) {
      const validate = ajv.getSchema(SCHEMA_FILES[file]!.$id as string) ?? ajv.compile(SCHEMA_FILES[file]!);
      assert.equal(validate(doc), false, `${what} against ${file}`);
    }
  });

  test(
    "Python jsonschema validates the examples with the files and rejects broken copies",
    { skip: python.skip },
    () => {
      const jobs = [
        ...EXAMPLES.map(([what, file, doc]) => ({ what, file: `${dir}${file}`, doc, bad: broken(doc) })),
        ...REFUSED.map(([what, file, doc]) => ({ what, file: `${dir}${file}`, doc, bad: doc })),
      ];
      const script = `
import json, sys
from jsonschema import Draft202012Validator
out = []
for job in json.load(sys.stdin):
    v = Draft202012Validator(json.load(open(job["file"])))
    Draft202012Validator.check_schema(v.schema)
    out.append([job["what"], v.is_valid(job["doc"]), v.is_valid(job["bad"])])
print(json.dumps(out))
`;
      const verdicts = JSON.parse(runPython(python.require(), script, JSON.stringify(jobs))) as [
        string,
        boolean,
        boolean,
      ][];
      assert.deepEqual(verdicts, [
        ...EXAMPLES.map(([what]) => [what, true, false]),
        ...REFUSED.map(([what]) => [what, false, false]),
      ]);
    },
  );
});

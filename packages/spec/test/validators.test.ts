import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { commitTokenJsonSchema } from "../src/schemas/commit-token.js";
import { outputManifestV1JsonSchema, outputManifestV2JsonSchema } from "../src/schemas/output-manifest.js";
import { regionJsonSchema, roleJsonSchema } from "../src/schemas/role.js";
import { streamSchemaJsonSchema } from "../src/schemas/stream-schema.js";
import { zarrArrayJsonSchema } from "../src/schemas/zarr.js";
import { AJV_OPTIONS, declaredSchemas, makeValidator, precompiledCheck } from "../src/validate.js";
import {
  GENERATED_VALIDATOR_TYPES,
  GENERATED_VALIDATORS,
  validatorExportName,
  validatorModuleText,
  validatorTypesText,
} from "../src/validator-code.js";
import { manifestV1, manifestV2, schema, streamSchemaArb, token, zarrArray } from "./examples.js";
// Loading the package makes every validator it has, as the build's generator does.
import "../src/index.js";
import * as generated from "#precompiled-validators";

/** dist/test → the package root. */
const PACKAGE_ROOT = new URL("../../", import.meta.url);

type Check = ((value: unknown) => boolean) & { errors?: unknown[] | null };

test("generated/validators.js and its types are what the build generates from the schemas (a stale file fails here)", async () => {
  for (const [file, text] of [
    [GENERATED_VALIDATORS, validatorModuleText(declaredSchemas())],
    [GENERATED_VALIDATOR_TYPES, validatorTypesText(declaredSchemas())],
  ] as const) {
    const onDisk = await readFile(new URL(file, PACKAGE_ROOT), "utf8");
    assert.ok(
      onDisk === text,
      `packages/spec/${file} differs from the schemas: run npm run build -w packages/spec`,
    );
  }
});

/** The generated module's validating functions, by export name. */
const GENERATED: Readonly<Record<string, unknown>> = generated;

test("every schema the package makes a validator of is checked by its own generated export, and nothing else is", () => {
  const ids = declaredSchemas().map((s) => (s as { $id: string }).$id);
  assert.ok(ids.length >= 15, `only ${ids.length} schemas declared`);
  for (const s of declaredSchemas()) {
    const id = (s as { $id: string }).$id;
    const name = validatorExportName(id);
    assert.equal(typeof GENERATED[name], "function", `${id}: no export ${name}`);
    assert.ok(
      precompiledCheck(s) === GENERATED[name],
      `${id}: its makeValidator call must pass precompiled.${name} from "#precompiled-validators"`,
    );
  }
  assert.deepEqual(Object.keys(GENERATED).sort(), ids.map(validatorExportName).sort());
  assert.equal(precompiledCheck({ type: "object" }), undefined);
  assert.equal(precompiledCheck({ $id: "zarr-stream:not-a-schema-of-ours" }), undefined);
});

test("export names: the $id's last part in camelCase; an $id without one is refused", () => {
  assert.equal(validatorExportName("zarr-stream:output-manifest-v2-paged"), "outputManifestV2Paged");
  assert.equal(validatorExportName("zarr-stream:write-v2-dump-v1"), "writeV2DumpV1");
  assert.throws(() => validatorExportName("zarr-stream:"), /no export name/);
  assert.throws(() => validatorExportName("zarr-stream:2-things"), /no export name/);
  assert.throws(
    () => validatorModuleText([{ $id: "a:one-two" }, { $id: "b:one_two" }]),
    /both make the export oneTwo/,
  );
});

test("a caller's schema under a package schema's $id is its own, checked by a run-time compile", () => {
  const region = makeValidator<unknown>(regionJsonSchema, "region");
  assert.notEqual(precompiledCheck(regionJsonSchema), undefined);
  const both = { lat: [0, 1], lon: [2, 3] };
  region(both);
  // The same $id, another schema: a region of one dim at most.
  const stricter = { ...regionJsonSchema, maxProperties: 1 };
  assert.equal(precompiledCheck(stricter), undefined);
  const check = makeValidator<unknown>(stricter, "stricter region");
  assert.deepEqual(check({ lon: [0, 1] }), { lon: [0, 1] });
  assert.throws(() => check(both), { name: "SchemaError", message: /more than 1 properties/ });
});

/** Every node of `doc` (a JSON value) as a path of keys and indices. */
function paths(doc: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out = [at];
  if (Array.isArray(doc)) {
    for (let i = 0; i < doc.length; i++) out.push(...paths(doc[i], [...at, i]));
  } else if (doc !== null && typeof doc === "object") {
    for (const [k, v] of Object.entries(doc)) out.push(...paths(v, [...at, k]));
  }
  return out;
}

/** `doc` with the node at `path` replaced by `value` (or removed, for `undefined`). */
function mutate(doc: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (value === undefined) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else parent[last] = value;
  return copy;
}

const REPLACEMENTS: unknown[] = [undefined, null, true, -1, 0.5, "", "x", [], {}, [1, 2], { zz: 1 }];

/**
 * Asserts that the precompiled function and a run-time Ajv compile of the same schema (with the same
 * options) agree on every mutation of `example`: the verdict and the whole first error, which is what
 * SchemaError's pointer and message are made of.
 */
function agree(jsonSchema: { $id: string }, examples: unknown[]): number {
  const precompiled = GENERATED[validatorExportName(jsonSchema.$id)] as Check;
  const compiled = new Ajv2020(AJV_OPTIONS).compile(jsonSchema) as Check;
  let rejected = 0;
  for (const example of examples) {
    assert.equal(precompiled(example), true, `${jsonSchema.$id}: the example must pass`);
    for (const path of paths(example)) {
      for (const value of REPLACEMENTS) {
        const doc = mutate(example, path, value);
        const verdict = precompiled(doc);
        assert.equal(verdict, compiled(doc), `${jsonSchema.$id} at /${path.join("/")}`);
        if (!verdict) {
          rejected++;
          assert.deepEqual(
            precompiled.errors?.[0],
            compiled.errors?.[0],
            `${jsonSchema.$id} /${path.join("/")}`,
          );
        }
      }
    }
  }
  return rejected;
}

test("the precompiled validators report the first error a run-time compile reports", () => {
  const cases: [{ $id: string }, unknown[]][] = [
    [streamSchemaJsonSchema, [schema]],
    [commitTokenJsonSchema, [token]],
    [outputManifestV1JsonSchema, [manifestV1]],
    [outputManifestV2JsonSchema, [manifestV2]],
    [zarrArrayJsonSchema, [zarrArray]],
    [regionJsonSchema, [{ lat: [0, 48], lon: [2, 3] }]],
    [roleJsonSchema, [{ kind: "single" }, { kind: "owner", nWriters: 4 }, { kind: "contributor", id: 3 }]],
  ];
  for (const [jsonSchema, examples] of cases) {
    assert.ok(agree(jsonSchema, examples) > 0, `${jsonSchema.$id}: no mutation was rejected`);
  }
});

test("the precompiled stream-schema validator agrees with a run-time compile on generated schemas", () => {
  fc.assert(
    fc.property(streamSchemaArb, (s) => {
      agree(streamSchemaJsonSchema, [s]);
    }),
    { numRuns: 20 },
  );
});

test("validating the package's documents never loads Ajv's compiler; a caller's own schema does", () => {
  // A fresh process: Ajv is CommonJS, so whatever loads it (an ES import or require) leaves it in the
  // CommonJS cache. The standalone code imports only Ajv's small run-time helpers (ucs2length).
  const script = `
    import { createRequire } from "node:module";
    const spec = await import(${JSON.stringify(new URL("dist/src/index.js", PACKAGE_ROOT).href)});
    const ajvLoaded = () =>
      Object.keys(createRequire(import.meta.url).cache).some((f) => f.endsWith("/ajv/dist/core.js"));
    const examples = await import(${JSON.stringify(new URL("dist/test/examples.js", PACKAGE_ROOT).href)});
    spec.validateStreamSchema(structuredClone(examples.schema));
    spec.validateCommitToken(structuredClone(examples.token));
    spec.validateOutputManifest(structuredClone(examples.manifestV2));
    const before = ajvLoaded();
    spec.makeValidator({ type: "integer" }, "thing")(1);
    console.log(JSON.stringify({ before, after: ajvLoaded() }));
  `;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.deepEqual(JSON.parse(out.trim().split("\n").at(-1)!), { before: false, after: true });
});

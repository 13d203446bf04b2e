import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  SchemaError,
  validateZarrArrayMetadata,
  validateZarrGroupMetadata,
  type ZarrArrayMetadata,
  type ZarrGroupMetadata,
  type ZarrNamedConfig,
  zarrArrayJsonSchema,
  zarrGroupJsonSchema,
} from "../src/index.js";

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** Every key of T, marked as T marks it: the compiler refuses a missing, extra or mis-marked key. */
type KeyPlan<T> = { [K in keyof T]-?: K extends RequiredKeys<T> ? "required" : "optional" };

const ARRAY_KEYS: KeyPlan<ZarrArrayMetadata> = {
  zarr_format: "required",
  node_type: "required",
  shape: "required",
  data_type: "required",
  chunk_grid: "required",
  chunk_key_encoding: "required",
  fill_value: "required",
  codecs: "required",
  attributes: "optional",
  dimension_names: "optional",
  storage_transformers: "optional",
};
const GROUP_KEYS: KeyPlan<ZarrGroupMetadata> = {
  zarr_format: "required",
  node_type: "required",
  attributes: "optional",
};
const NAMED_KEYS: KeyPlan<ZarrNamedConfig> = {
  name: "required",
  configuration: "optional",
  must_understand: "optional",
};

interface ObjectSchema {
  properties: Record<string, unknown>;
  required: readonly string[];
}

function assertAgree(what: string, schema: ObjectSchema, plan: Record<string, "required" | "optional">) {
  assert.deepEqual(Object.keys(schema.properties).sort(), Object.keys(plan).sort(), `${what}: keys`);
  const required = Object.keys(plan).filter((k) => plan[k] === "required");
  assert.deepEqual([...schema.required].sort(), required.sort(), `${what}: required keys`);
}

const named: fc.Arbitrary<ZarrNamedConfig> = fc.record(
  {
    name: fc.string({ minLength: 1, maxLength: 8 }),
    configuration: fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), fc.integer(), { maxKeys: 3 }),
    must_understand: fc.boolean(),
  },
  { requiredKeys: ["name"] },
);

/** Any value of the TypeScript type (the compiler checks the arbitrary produces exactly that type). */
const arrayMetadata: fc.Arbitrary<ZarrArrayMetadata> = fc.record(
  {
    zarr_format: fc.constant(3 as const),
    node_type: fc.constant("array" as const),
    shape: fc.array(fc.nat(1000), { maxLength: 4 }),
    data_type: fc.oneof(fc.constantFrom("float64", "int32", "uint8"), named),
    chunk_grid: named,
    chunk_key_encoding: named,
    fill_value: fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.constantFrom("NaN", "Infinity", "0x7fc00000"),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.oneof(fc.integer(), fc.string()), { maxLength: 2 }),
    ),
    codecs: fc.array(named, { minLength: 1, maxLength: 4 }),
    attributes: fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), fc.string(), { maxKeys: 2 }),
    dimension_names: fc.array(fc.option(fc.string(), { nil: null }), { maxLength: 4 }),
    storage_transformers: fc.array(named, { maxLength: 1 }),
  },
  {
    // Left optional, a required key would make the record's type not assignable to ZarrArrayMetadata.
    requiredKeys: [
      "zarr_format",
      "node_type",
      "shape",
      "data_type",
      "chunk_grid",
      "chunk_key_encoding",
      "fill_value",
      "codecs",
    ],
  },
);

describe("Zarr v3 metadata: TypeScript types and JSON Schemas agree", () => {
  test("the schemas list exactly the types' keys, and require exactly the required ones", () => {
    assertAgree("array", zarrArrayJsonSchema, ARRAY_KEYS);
    assertAgree("group", zarrGroupJsonSchema, GROUP_KEYS);
    assertAgree("codec", zarrArrayJsonSchema.properties.chunk_grid, NAMED_KEYS);
  });

  test("every value of the array type passes the schema; dropping a required key fails it", () => {
    fc.assert(
      fc.property(arrayMetadata, fc.constantFrom(...zarrArrayJsonSchema.required), (doc, drop) => {
        assert.deepEqual(validateZarrArrayMetadata(doc), doc);
        const { [drop]: _, ...rest } = doc;
        assert.throws(() => validateZarrArrayMetadata(rest, "a/zarr.json"), {
          name: "SchemaError",
          document: "a/zarr.json",
        });
      }),
      { numRuns: 200 },
    );
  });

  test("a value outside the type fails with the pointer of the offending field", () => {
    const good: ZarrArrayMetadata = {
      zarr_format: 3,
      node_type: "array",
      shape: [4],
      data_type: "float64",
      chunk_grid: { name: "regular", configuration: { chunk_shape: [2] } },
      chunk_key_encoding: { name: "default" },
      fill_value: 0,
      codecs: [{ name: "bytes", configuration: { endian: "little" } }],
    };
    const cases: [string, Record<string, unknown>][] = [
      ["/zarr_format", { zarr_format: 2 }],
      ["/shape/0", { shape: [-1] }],
      ["/codecs", { codecs: [] }],
      ["/codecs/0", { codecs: [{ configuration: {} }] }],
      ["/dimension_names/0", { dimension_names: [1] }],
      ["/extra/must_understand", { extra: { must_understand: true } }],
    ];
    for (const [pointer, change] of cases) {
      assert.throws(
        () => validateZarrArrayMetadata({ ...good, ...change }, "v/zarr.json"),
        (e) => e instanceof SchemaError && e.pointer === pointer && e.message.startsWith("v/zarr.json: "),
        pointer,
      );
    }
    assert.deepEqual(validateZarrArrayMetadata({ ...good, extra: { must_understand: false } }).shape, [4]);
    assert.deepEqual(validateZarrGroupMetadata({ zarr_format: 3, node_type: "group" }).node_type, "group");
    assert.throws(() => validateZarrGroupMetadata({ zarr_format: 3, node_type: "array" }), {
      name: "SchemaError",
      pointer: "/node_type",
    });
  });
});

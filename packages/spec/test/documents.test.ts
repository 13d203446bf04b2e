import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  makeValidator,
  SchemaError,
  schemaFingerprint,
  schemaFromManifest,
  validateCommitToken,
  validateOutputManifest,
  validateOutputManifestV1,
  validateOutputManifestV2,
  validateRegion,
  validateRole,
  validateStreamSchema,
} from "../src/index.js";
import { manifestFor, manifestV1, manifestV2, schema, streamSchemaArb, token } from "./examples.js";

const clone = <T>(v: T): T => structuredClone(v);
const FORBIDDEN = ["__proto__", "constructor", "prototype"];

/** Asserts a SchemaError at `pointer` (when given). */
function rejects(validate: (v: unknown) => unknown, value: unknown, pointer?: string): void {
  assert.throws(
    () => validate(value),
    (e: unknown) => {
      assert.ok(e instanceof SchemaError, String(e));
      if (pointer !== undefined) assert.equal(e.pointer, pointer, e.message);
      assert.ok(e.message.includes(e.pointer), e.message);
      return true;
    },
  );
}

/** Missing field, wrong type and an own "__proto__" key (as JSON.parse makes it), top level and nested. */
function corruptions(
  validate: (v: unknown) => unknown,
  example: object,
  field: string,
  nested: string,
): void {
  validate(clone(example));
  const missing = clone(example) as Record<string, unknown>;
  delete missing[field];
  rejects(validate, missing, "/");
  rejects(validate, { ...clone(example), [field]: true }, `/${field}`);
  const text = JSON.stringify(example);
  rejects(validate, JSON.parse(`{"__proto__":{"polluted":1},${text.slice(1)}`), "/__proto__");
  const withNested = JSON.parse(text) as Record<string, unknown>;
  (withNested[nested] as Record<string, unknown>[])[0] = JSON.parse('{"constructor":{}}');
  rejects(validate, withNested, `/${nested}/0/constructor`);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
}

test("makeValidator names the document and the pointer, '/' for the root", () => {
  const v = makeValidator<{ a: number }>(
    { type: "object", properties: { a: { type: "integer" } }, required: ["a"], additionalProperties: false },
    "thing",
  );
  assert.deepEqual(v({ a: 1 }), { a: 1 });
  assert.throws(() => v({ a: "x" }), {
    name: "SchemaError",
    pointer: "/a",
    document: "thing",
    message: /^thing: \/a: /,
  });
  assert.throws(() => v([]), { pointer: "/" });
  assert.throws(() => v({ a: 1, b: 2 }), { pointer: "/", message: /"b"/ });
});

test("a forbidden key anywhere is refused at its RFC 6901 pointer, escapes included", () => {
  const v = makeValidator<unknown>({}, "thing");
  const token = fc.oneof(
    fc.nat({ max: 3 }),
    fc.string({ maxLength: 4 }).filter((k) => !FORBIDDEN.includes(k)),
  );
  fc.assert(
    fc.property(fc.array(token, { maxLength: 8 }), fc.constantFrom(...FORBIDDEN), (path, bad) => {
      let doc: unknown = JSON.parse(`{${JSON.stringify(bad)}:1}`);
      for (const t of [...path].reverse()) {
        if (typeof t === "number") {
          const arr: unknown[] = Array.from({ length: t + 1 }, () => ({ ok: [1] }));
          arr[t] = doc;
          doc = arr;
        } else doc = { sibling: { ok: 1 }, [t]: doc };
      }
      const escaped = [...path, bad].map((t) => `/${String(t).replaceAll("~", "~0").replaceAll("/", "~1")}`);
      rejects(v, doc, escaped.join(""));
    }),
  );
});

test("a document nested deeper than 64 levels is refused at the level past the limit", () => {
  const v = makeValidator<unknown>({}, "thing");
  const nest = (depth: number): unknown => (depth === 0 ? 1 : [nest(depth - 1)]);
  v(nest(65));
  rejects(v, nest(66), "/0".repeat(65));
});

test("§3 stream schema: corrupted examples are SchemaErrors", () => {
  corruptions(validateStreamSchema, schema, "time_dim", "vars");
});

test("§5.2 commit token: corrupted examples are SchemaErrors", () => {
  corruptions(validateCommitToken, token, "fingerprint", "records");
  rejects(validateCommitToken, { ...token, blobs: [{ scope: "static", record: 1, key: "k" }] }, "/blobs/0");
  rejects(validateCommitToken, { ...token, blobs: [{ scope: "record", key: "k" }] }, "/blobs/0");
  rejects(validateCommitToken, { ...token, blobs: [{ scope: "static", key: ".." }] }, "/blobs/0/key");
  rejects(validateCommitToken, { ...token, records: [...token.records].reverse() }, "/records/1");
  rejects(validateCommitToken, { ...token, blobs: [...token.blobs].reverse() }, "/blobs/1");
  rejects(validateCommitToken, { ...token, region: { lat: [0, 1, 2] } }, "/region/lat");
});

test("§8 output manifest v1 and v2: corrupted examples are SchemaErrors", () => {
  corruptions(validateOutputManifestV1, manifestV1, "n_records", "dims");
  corruptions(validateOutputManifestV2, manifestV2, "commit_seq", "blobs");
  rejects(validateOutputManifestV1, { ...manifestV1, total_records: 4 }, "/");
  rejects(validateOutputManifestV1, { ...manifestV1, created_at: "2026-08-01 12:00:00" }, "/created_at");
  rejects(validateOutputManifestV2, { ...manifestV2, fingerprint: "sha256:XYZ" }, "/fingerprint");
});

test("§8.2 v2 cross-field rules: records only in indexed mode, sorted lists, known names", () => {
  const { records: _r, ...append } = manifestV2;
  validateOutputManifestV2({ ...append, time_mode: "append" });
  rejects(validateOutputManifestV2, { ...manifestV2, time_mode: "append" }, "/records");
  rejects(validateOutputManifestV2, append, "/records");
  rejects(validateOutputManifestV2, { ...manifestV2, n_records: 3 }, "/dims");
  rejects(validateOutputManifestV2, { ...manifestV2, statics_committed: ["nope"] }, "/statics_committed/0");
  rejects(validateOutputManifestV2, { ...manifestV2, region_dims: ["lon", "lat"] }, "/region_dims/1");
  rejects(validateOutputManifestV2, { ...manifestV2, region_dims: ["time"] }, "/region_dims/0");
  rejects(validateOutputManifestV2, { ...manifestV2, blobs: [...manifestV2.blobs].reverse() }, "/blobs/1");
  const times = clone(manifestV2);
  times.records!.entries[2]!.t = 0;
  rejects(validateOutputManifestV2, times, "/records/entries/2/t");
});

test("§8.1 validateOutputManifest dispatches on the exact label and refuses others", () => {
  assert.equal(validateOutputManifest(clone(manifestV1)).schema, "earthsciio/output-manifest/v1");
  assert.equal(validateOutputManifest(clone(manifestV2)).schema, "earthsciio/output-manifest/v2");
  rejects(validateOutputManifest, { ...manifestV1, schema: "earthsciio/output-manifest/v3" }, "/schema");
  rejects(validateOutputManifest, { ...manifestV1, schema: "earthsciio/output-manifest/v1 " }, "/schema");
  rejects(validateOutputManifest, null, "/schema");
});

test("§4 region and §5 role documents", () => {
  validateRegion({ lat: [0, 48] });
  rejects(validateRegion, { lat: [0] }, "/lat");
  rejects(validateRegion, { lat: [0, "4"] }, "/lat/1");
  rejects(validateRegion, JSON.parse('{"__proto__":[0,1]}'), "/__proto__");
  validateRole({ kind: "single" });
  validateRole({ kind: "owner", nWriters: 4 });
  validateRole({ kind: "contributor", id: 3 });
  rejects(validateRole, { kind: "owner", nWriters: 0 });
  rejects(validateRole, { kind: "owner" });
  rejects(validateRole, { kind: "contributor", id: 1, __proto__x: 1 });
  rejects(validateRole, JSON.parse('{"kind":"single","__proto__":{}}'), "/__proto__");
});

test("§3 stream schema semantics name the failing pointer", () => {
  const cases: [string, (s: ReturnType<typeof clone<typeof schema>>) => void][] = [
    [
      "/time_dim",
      (s) => {
        s.time_dim = "t";
      },
    ],
    [
      "/vars/1/dims/1",
      (s) => {
        s.vars[1]!.dims[1] = "depth";
      },
    ],
    [
      "/vars/0/dims",
      (s) => {
        s.vars[0]!.dims = ["lat", "lon"];
      },
    ],
    ["/vars/0/dims/3", (s) => s.vars[0]!.dims.push("time")],
    [
      "/statics/0/dims/0",
      (s) => {
        s.statics[0]!.dims = ["time", "lat"];
      },
    ],
    ["/chunk_shape", (s) => delete s.chunk_shape.lon],
    [
      "/shard_shape/depth",
      (s) => {
        s.shard_shape.depth = 1;
      },
    ],
    [
      "/shard_shape/lon",
      (s) => {
        s.shard_shape.lon = 3;
      },
    ],
    [
      "/chunk_shape/lat",
      (s) => {
        s.chunk_shape.lat = 0;
      },
    ],
    [
      "/dims/1/1",
      (s) => {
        s.dims[1]![1] = -1;
      },
    ],
    [
      "/dims/2/0",
      (s) => {
        s.dims[2]![0] = "lat";
      },
    ],
    [
      "/statics/0/name",
      (s) => {
        s.statics[0]!.name = "pressure";
      },
    ],
    [
      "/vars/0/name",
      (s) => {
        s.vars[0]!.name = "lat";
      },
    ],
    [
      "/vars/0/name",
      (s) => {
        s.vars[0]!.name = "a/b";
      },
    ],
    [
      "/vars/0/name",
      (s) => {
        s.vars[0]!.name = "blobs";
      },
    ],
    [
      "/profile",
      (s) => {
        (s as { profile: string }).profile = "fast";
      },
    ],
    [
      "/time_mode/indexed/times/2",
      (s) => {
        s.time_mode = { indexed: { times: [0, 2, 2] } };
      },
    ],
    [
      "/coords/depth",
      (s) => {
        s.coords = { depth: { values: [] } };
      },
    ],
    [
      "/coords/lat/values",
      (s) => {
        s.coords = { lat: { values: [1] } };
      },
    ],
    [
      "/coords/time/values",
      (s) => {
        s.coords = { time: { values: [] } };
      },
    ],
  ];
  for (const [pointer, corrupt] of cases) {
    const s = clone(schema);
    corrupt(s);
    rejects(validateStreamSchema, s, pointer);
  }
});

test("§8.2 schemaFingerprint(schemaFromManifest(m)) equals m.fingerprint for random schemas", () => {
  fc.assert(
    fc.property(streamSchemaArb, (s) => {
      validateStreamSchema(s);
      const m = validateOutputManifestV2(JSON.parse(JSON.stringify(manifestFor(s))));
      const rebuilt = schemaFromManifest(m);
      assert.equal(schemaFingerprint(rebuilt), m.fingerprint);
      if (m.time_mode === "indexed") assert.deepEqual(rebuilt.time_mode, s.time_mode);
    }),
    { numRuns: 300 },
  );
});

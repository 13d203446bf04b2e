/**
 * The wire documents' JSON Schemas as standalone draft 2020-12 files, for bindings that do not run
 * TypeScript (Python `jsonschema`, Julia, Rust). They are generated from the schemas Ajv uses here, so the
 * two cannot disagree; `scripts/write-schemas.mjs` writes them to `schemas/` at build time.
 *
 * The files state shape only. Cross-field rules (sorted lists, time dim length equal to n_records, blob
 * writers below n_writers, ...) live in the validators of documents.ts and are listed in schemas/README.md.
 */
import { commitTokenJsonSchema } from "./schemas/commit-token.js";
import { conformanceCorpusJsonSchema, conformanceDumpJsonSchema } from "./schemas/conformance.js";
import {
  outputManifestV1JsonSchema,
  outputManifestV2JsonSchema,
  outputManifestV2PagedJsonSchema,
} from "./schemas/output-manifest.js";
import { regionJsonSchema } from "./schemas/role.js";
import { streamSchemaJsonSchema } from "./schemas/stream-schema.js";
import { zarrArrayJsonSchema, zarrGroupJsonSchema } from "./schemas/zarr.js";

const DRAFT = "https://json-schema.org/draft/2020-12/schema";
/** Base of the files' $id: a name, not a location (the files ship with the package). */
const BASE = "urn:zarr-stream:schemas:";

type JsonObject = Record<string, unknown>;

/** The schema without its internal `zarr-stream:` $id, so it can be embedded or given a file $id. */
function body(schema: object): JsonObject {
  const { $id: _id, $schema: _schema, ...rest } = schema as JsonObject;
  return structuredClone(rest);
}

function file(name: string, title: string, schema: object): JsonObject {
  return { $schema: DRAFT, $id: `${BASE}${name}`, title, ...body(schema) };
}

const manifestFile = {
  $schema: DRAFT,
  $id: `${BASE}output-manifest.schema.json`,
  title: "earthsciio/output-manifest v1 or v2 (seed 000 §8; readers pin the schema label)",
  oneOf: [{ $ref: "#/$defs/v1" }, { $ref: "#/$defs/v2" }],
  $defs: { v1: body(outputManifestV1JsonSchema), v2: body(outputManifestV2JsonSchema) },
};

/** File name → JSON Schema document, in the order the README lists them. */
export const SCHEMA_FILES: Readonly<Record<string, JsonObject>> = {
  "output-manifest.schema.json": manifestFile,
  "output-manifest-v1.schema.json": file(
    "output-manifest-v1.schema.json",
    "earthsciio/output-manifest/v1 (Julia/Rust spelling)",
    outputManifestV1JsonSchema,
  ),
  "output-manifest-v2.schema.json": file(
    "output-manifest-v2.schema.json",
    "earthsciio/output-manifest/v2",
    outputManifestV2JsonSchema,
  ),
  "output-manifest-v2-paged.schema.json": file(
    "output-manifest-v2-paged.schema.json",
    "zarr-stream/output-manifest/v2-paged (a v2 manifest whose long lists live in pages; not the seed's)",
    outputManifestV2PagedJsonSchema,
  ),
  "commit-token.schema.json": file(
    "commit-token.schema.json",
    "earthsciio/commit-token/v1 (seed 000 §5.2)",
    commitTokenJsonSchema,
  ),
  "stream-schema.schema.json": file(
    "stream-schema.schema.json",
    "stream schema (seed 000 §3)",
    streamSchemaJsonSchema,
  ),
  "region.schema.json": file("region.schema.json", "region, wire form (seed 000 §4)", regionJsonSchema),
  "write-conformance-spec-v2.schema.json": file(
    "write-conformance-spec-v2.schema.json",
    "earthsciio/write-conformance-spec/v2 corpus (seed 000 §10)",
    conformanceCorpusJsonSchema,
  ),
  "write-v2-dump.schema.json": file(
    "write-v2-dump.schema.json",
    "earthsciio/write-v2-dump/v1 reader dump (seed 000 §10)",
    conformanceDumpJsonSchema,
  ),
  "zarr-array.schema.json": file(
    "zarr-array.schema.json",
    "Zarr v3 array metadata (zarr.json), core fields",
    zarrArrayJsonSchema,
  ),
  "zarr-group.schema.json": file(
    "zarr-group.schema.json",
    "Zarr v3 group metadata (zarr.json), core fields",
    zarrGroupJsonSchema,
  ),
};

/** A schema file's text as written to disk: two-space indent, trailing newline. */
export function schemaFileText(name: string): string {
  const doc = SCHEMA_FILES[name];
  if (doc === undefined) throw new Error(`no schema file ${name}`);
  return `${JSON.stringify(doc, null, 2)}\n`;
}

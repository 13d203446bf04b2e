import * as precompiled from "#precompiled-validators";
import { compareCodePoints } from "./canonical-json.js";
import { SchemaError } from "./errors.js";
import { commitTokenJsonSchema } from "./schemas/commit-token.js";
import {
  outputManifestV1JsonSchema,
  outputManifestV2JsonSchema,
  outputManifestV2PagedJsonSchema,
} from "./schemas/output-manifest.js";
import { regionJsonSchema, roleJsonSchema } from "./schemas/role.js";
import {
  type CommitToken,
  OUTPUT_MANIFEST_V1,
  OUTPUT_MANIFEST_V2,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifest,
  type OutputManifestV1,
  type OutputManifestV2,
  type Region,
  type Role,
} from "./types.js";
import { makeValidator } from "./validate.js";

function fail(doc: string, pointer: string, reason: string): never {
  throw new SchemaError(`${doc}: ${pointer}: ${reason}`, pointer, doc);
}

/** Strictly increasing under `compare` (sorted, no duplicates); returns the first offending index. */
function firstUnsorted<T>(items: readonly T[], compare: (a: T, b: T) => number): number {
  for (let i = 1; i < items.length; i++) if (compare(items[i - 1]!, items[i]!) >= 0) return i;
  return -1;
}

interface BlobRef {
  scope: "static" | "record";
  record?: number;
  writer?: number;
  key: string;
}

/** Blob order of seed §5.2: scope ("record" < "static"), record, writer, key. */
function compareBlobs(a: BlobRef, b: BlobRef): number {
  return (
    compareCodePoints(a.scope, b.scope) ||
    (a.record ?? -1) - (b.record ?? -1) ||
    (a.writer ?? -1) - (b.writer ?? -1) ||
    compareCodePoints(a.key, b.key)
  );
}

function checkSortedNames(doc: string, pointer: string, names: readonly string[]): void {
  const i = firstUnsorted(names, compareCodePoints);
  if (i >= 0) fail(doc, `${pointer}/${i}`, "names must be sorted and unique");
}

const TOKEN = "commit token";
const tokenShape = /* @__PURE__ */ makeValidator<CommitToken>(
  commitTokenJsonSchema,
  TOKEN,
  precompiled.commitToken,
);

/** Seed §5.2 CommitToken: shape plus sorted lists (records by index, statics, blobs, objects). */
/**
 * Seed §5.2: t round-trips through JSON exactly. Python writes -0.0 and reads it back as -0.0; JavaScript
 * writes -0 as 0. No language can carry -0 alike through every other, so -0 is refused wherever a time
 * enters (writer-decisions.md rule 22).
 */
function refuseNegativeZero(doc: string, pointer: string, t: number | null | undefined): void {
  if (typeof t === "number" && Object.is(t, -0))
    fail(
      doc,
      pointer,
      "t is -0, which JSON does not carry alike in every language (JavaScript prints 0): use 0",
    );
}

export function validateCommitToken(value: unknown): CommitToken {
  const token = tokenShape(value);
  token.records.forEach((r, i) => {
    refuseNegativeZero(TOKEN, `/records/${i}/t`, r.t);
  });
  const r = firstUnsorted(token.records, (a, b) => a.index - b.index);
  if (r >= 0) fail(TOKEN, `/records/${r}`, "records must be sorted by index without repeats");
  checkSortedNames(TOKEN, "/statics", token.statics);
  const b = firstUnsorted(token.blobs, compareBlobs);
  if (b >= 0) fail(TOKEN, `/blobs/${b}`, "blobs must be sorted by (scope, record, key) without repeats");
  checkSortedNames(TOKEN, "/objects", token.objects);
  return token;
}

const MANIFEST_V1 = "output manifest v1";
const MANIFEST_V2 = "output manifest v2";
const MANIFEST_V2_PAGED = "output manifest v2-paged";
const manifestV1Shape = /* @__PURE__ */ makeValidator<OutputManifestV1>(
  outputManifestV1JsonSchema,
  MANIFEST_V1,
  precompiled.outputManifestV1,
);
const manifestV2Shape = /* @__PURE__ */ makeValidator<OutputManifestV2>(
  outputManifestV2JsonSchema,
  MANIFEST_V2,
  precompiled.outputManifestV2,
);
const manifestV2PagedShape = /* @__PURE__ */ makeValidator<OutputManifestV2>(
  outputManifestV2PagedJsonSchema,
  MANIFEST_V2_PAGED,
  precompiled.outputManifestV2Paged,
);

/** The name errors give a v2 manifest: its form's. */
const docName = (m: OutputManifestV2) =>
  m.schema === OUTPUT_MANIFEST_V2_PAGED ? MANIFEST_V2_PAGED : MANIFEST_V2;

function checkCommonManifest(doc: string, m: OutputManifestV1 | OutputManifestV2): void {
  const names = m.dims.map((d) => d.name);
  if (!names.includes(m.time_dim)) fail(doc, "/time_dim", `"${m.time_dim}" is not a dim`);
  const ts = firstUnsorted(m.time_shards, (a, b) => a.index - b.index);
  if (ts >= 0) fail(doc, `/time_shards/${ts}`, "time shards must be sorted by index without repeats");
  refuseNegativeZero(doc, "/last_t", m.last_t);
  m.time_shards.forEach((e, i) => {
    refuseNegativeZero(doc, `/time_shards/${i}/t_start`, e.t_start);
    refuseNegativeZero(doc, `/time_shards/${i}/t_end`, e.t_end);
  });
}

export function validateOutputManifestV1(value: unknown): OutputManifestV1 {
  const m = manifestV1Shape(value);
  checkCommonManifest(MANIFEST_V1, m);
  return m;
}

/**
 * v2 shape plus its cross-field rules (docs/output-manifest-v2.md), by label: under the seed's label every
 * list is inline (no page refs); under OUTPUT_MANIFEST_V2_PAGED a manifest as stored
 * (docs/manifest-pages.md) may keep a list in pages, and passes with the rules on its paged lists left to
 * resolveManifestPages, which checks them on the resolved lists.
 */
export function validateOutputManifestV2(value: unknown): OutputManifestV2 {
  const label = labelOf(value);
  if (label === OUTPUT_MANIFEST_V2_PAGED) {
    const m = manifestV2PagedShape(value);
    checkOutputManifestV2Rules(m, hasPagedLists(m));
    return m;
  }
  refusePageRefs(value);
  const m = manifestV2Shape(value);
  checkOutputManifestV2Rules(m);
  return m;
}

/**
 * Page refs under the seed's label: refused (the shape would refuse them too) with a message saying what
 * such a manifest is. zarr-stream wrote paged manifests under the seed's label before the paged form had
 * a label of its own; `zstream manifest pages on|off` relabels one.
 */
function refusePageRefs(value: unknown): void {
  if (value === null || typeof value !== "object") return;
  const doc = value as { time_shard_pages?: unknown; records?: { pages?: unknown; page_index?: unknown } };
  const pointer =
    doc.time_shard_pages !== undefined
      ? "/time_shard_pages"
      : doc.records?.pages !== undefined
        ? "/records/pages"
        : doc.records?.page_index !== undefined
          ? "/records/page_index"
          : undefined;
  if (pointer === undefined) return;
  fail(
    MANIFEST_V2,
    pointer,
    `page refs under the seed's label, whose lists are whole: a paged manifest is labelled ${OUTPUT_MANIFEST_V2_PAGED} (zstream manifest pages on|off relabels one written by an earlier zarr-stream)`,
  );
}

/** Whether a v2 manifest as stored keeps a list in pages (docs/manifest-pages.md). */
export function hasPagedLists(m: OutputManifestV2): boolean {
  return m.time_shard_pages !== undefined || hasPagedRecords(m);
}

const hasPagedRecords = (m: OutputManifestV2) =>
  m.records?.pages !== undefined || m.records?.page_index !== undefined;

/** Where a paged manifest keeps its lists (docs/manifest-pages.md): records in indexed mode, time shards in append. */
function checkPagedLists(m: OutputManifestV2): void {
  const doc = MANIFEST_V2_PAGED;
  if (m.records?.pages !== undefined && m.records.page_index !== undefined)
    fail(doc, "/records/page_index", "records has pages or page_index, not both");
  if (m.records !== undefined && hasPagedRecords(m)) {
    if (m.records.entries.length > 0)
      fail(doc, "/records/entries", "paged records keep every entry in pages");
    if (m.time_shards.length > 0)
      fail(doc, "/time_shards", "an indexed manifest with paged records derives its time shards");
    if (m.time_shard_pages !== undefined)
      fail(doc, "/time_shard_pages", "indexed time shards are derived, not paged");
  }
  if (m.time_shard_pages !== undefined && m.time_mode !== "append")
    fail(doc, "/time_shard_pages", "only append mode pages its time shards");
}

/** The v2 cross-field rules; `paged` skips those on the lists that live partly in pages. */
export function checkOutputManifestV2Rules(m: OutputManifestV2, paged = false): void {
  const doc = docName(m);
  if (!paged) checkCommonManifest(doc, m);
  else if (!m.dims.some((d) => d.name === m.time_dim)) fail(doc, "/time_dim", `"${m.time_dim}" is not a dim`);
  const timeLength = m.dims.find((d) => d.name === m.time_dim)!.length;
  if (timeLength !== m.n_records) {
    fail(doc, "/dims", `time dim length ${timeLength} differs from n_records ${m.n_records}`);
  }
  if (paged) checkPagedLists(m);
  if (m.time_mode === "indexed") {
    if (m.records === undefined) fail(doc, "/records", "indexed mode needs records");
    if (!paged && m.records.entries.length !== m.n_records) {
      fail(doc, "/records/entries", `${m.records.entries.length} entries for n_records ${m.n_records}`);
    }
    m.records.entries.forEach((e, i) => {
      refuseNegativeZero(doc, `/records/entries/${i}/t`, e.t);
    });
    const t = paged ? -1 : firstUnsorted(m.records.entries, (a, b) => (a.t < b.t ? -1 : 1));
    if (t >= 0) fail(doc, `/records/entries/${t}/t`, "record times must be strictly increasing");
  } else if (m.records !== undefined) {
    fail(doc, "/records", "append mode has no records (committed records are 0..n_records-1)");
  }
  const nonTime = new Set(m.dims.map((d) => d.name).filter((d) => d !== m.time_dim));
  m.region_dims.forEach((d, i) => {
    if (!nonTime.has(d)) fail(doc, `/region_dims/${i}`, `"${d}" is not a non-time dim`);
  });
  checkSortedNames(doc, "/region_dims", m.region_dims);
  checkSortedNames(doc, "/statics_committed", m.statics_committed);
  const statics = new Set(m.statics.map((s) => s.name));
  m.statics_committed.forEach((name, i) => {
    if (!statics.has(name)) fail(doc, `/statics_committed/${i}`, `"${name}" is not a static`);
  });
  const b = firstUnsorted(m.blobs, compareBlobs);
  if (b >= 0)
    fail(doc, `/blobs/${b}`, "blobs must be sorted by (scope, record, writer, key) without repeats");
  m.blobs.forEach((blob, i) => {
    if (blob.writer >= m.n_writers) fail(doc, `/blobs/${i}/writer`, `writer ${blob.writer} >= n_writers`);
    if (blob.record !== undefined && blob.record >= m.n_records) {
      fail(doc, `/blobs/${i}/record`, `record ${blob.record} >= n_records ${m.n_records}`);
    }
  });
}

function labelOf(value: unknown): unknown {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>).schema
    : undefined;
}

/**
 * Dispatches on the exact `schema` label (readers pin it, seed §8.1): the seed's v1 and v2, and the paged
 * form of v2 (docs/manifest-pages.md); any other label is refused.
 */
export function validateOutputManifest(value: unknown): OutputManifest {
  const label = labelOf(value);
  if (label === OUTPUT_MANIFEST_V1) return validateOutputManifestV1(value);
  if (label === OUTPUT_MANIFEST_V2 || label === OUTPUT_MANIFEST_V2_PAGED)
    return validateOutputManifestV2(value);
  return fail("output manifest", "/schema", `unknown manifest label ${JSON.stringify(label) ?? "(none)"}`);
}

export const validateRegion: (value: unknown) => Region = /* @__PURE__ */ makeValidator<Region>(
  regionJsonSchema,
  "region",
  precompiled.region,
);
export const validateRole: (value: unknown) => Role = /* @__PURE__ */ makeValidator<Role>(
  roleJsonSchema,
  "role",
  precompiled.role,
);

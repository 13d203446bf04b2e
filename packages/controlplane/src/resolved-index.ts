import { setTimeout as sleep } from "node:timers/promises";
import { SchemaError, stringifyJsonExact } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { acquire, release } from "./claims.js";
import { type Clock, isObject, type JsonObject, parseDocument } from "./documents.js";
import { ClaimConflict, ManifestError, ResolvedIndexConflict } from "./errors.js";
import { diffFields, resolvedIndexIdentityHash } from "./identity.js";
import { INDEX_KEY } from "./layout.js";
import { canonicalJson, utf8 } from "./pyjson.js";
import type { RootAttributes } from "./root-attributes.js";

export const ATTR_INDEX = "firecube_resolved_index";
export const ATTR_INDEX_HASH = "firecube_resolved_index_identity_hash";
export const INDEX_CLAIM = "resolved_index:current";

export interface ResolvedIndexDeclaration {
  index: JsonObject;
  /** Discovered-axis item manifest; each item has a string identity_hash. */
  items?: JsonObject[];
}

export interface ResolvedIndexRecord {
  identity_hash: string;
  index: JsonObject;
  items?: JsonObject[];
  recorded_at: string;
  recorded_by_run_id: string;
  schema_version: "v1";
}

export type EnsureOutcome = "created" | "matched_existing" | "conflict_refused" | "rebuilt";

export interface EnsureResult {
  outcome: EnsureOutcome;
  identityHash: string;
  /** Precedence row that decided (1-7). */
  row: number;
  record: ResolvedIndexRecord;
}

export function isoTimestamp(seconds: number): string {
  return new Date(Math.round(seconds * 1000)).toISOString();
}

function byCoordinate(items: JsonObject[]): JsonObject[] {
  const value = (i: JsonObject) => i.coordinate_value;
  return [...items].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (typeof x === "number" && typeof y === "number") return x - y;
    return String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
  });
}

export function buildResolvedIndexRecord(
  decl: ResolvedIndexDeclaration,
  runId: string,
  now: number,
): ResolvedIndexRecord {
  const record: ResolvedIndexRecord = {
    identity_hash: resolvedIndexIdentityHash(decl.index, decl.items),
    index: decl.index,
    recorded_at: isoTimestamp(now),
    recorded_by_run_id: runId,
    schema_version: "v1",
  };
  if (decl.items !== undefined) record.items = byCoordinate(decl.items);
  return record;
}

/** Canonical bytes of a record: sorted keys, compact, raw UTF-8, no trailing newline. */
export function recordBytes(record: object): Uint8Array {
  return utf8(canonicalJson(record));
}

/**
 * Reads index/current.json. Row 6 (schema_version other than v1) and a record whose identity hash does not
 * recompute are ManifestErrors: we refuse rather than guess.
 */
export async function readResolvedIndexRecord(store: Store): Promise<ResolvedIndexRecord | undefined> {
  const bytes = await store.get(INDEX_KEY);
  if (bytes === undefined) return undefined;
  let doc: JsonObject;
  try {
    doc = parseDocument(bytes, INDEX_KEY);
  } catch (e) {
    throw new ManifestError(`${INDEX_KEY}: ${(e as Error).message}`, "unreadable-record", INDEX_KEY);
  }
  if (doc.schema_version !== "v1") {
    throw new ManifestError(
      `${INDEX_KEY}: schema_version ${stringifyJsonExact(doc.schema_version)} is not supported (want "v1")`,
      "unsupported-schema-version",
      INDEX_KEY,
    );
  }
  if (
    !isObject(doc.index) ||
    typeof doc.identity_hash !== "string" ||
    (doc.items !== undefined && !Array.isArray(doc.items))
  ) {
    throw new ManifestError(
      `${INDEX_KEY}: index, identity_hash or items malformed`,
      "unreadable-record",
      INDEX_KEY,
    );
  }
  const recomputed = resolvedIndexIdentityHash(doc.index, doc.items as JsonObject[] | undefined);
  if (recomputed !== doc.identity_hash) {
    throw new ManifestError(
      `${INDEX_KEY}: identity-hash mismatch: recorded ${doc.identity_hash}, content hashes to ${recomputed} (tampered?)`,
      "identity-hash-mismatch",
      INDEX_KEY,
    );
  }
  return doc as unknown as ResolvedIndexRecord;
}

interface MirroredAttrs {
  hash?: string;
  payload?: string;
}

async function readMirror(attrs: RootAttributes): Promise<MirroredAttrs> {
  const a = (await attrs.read()) ?? {};
  const out: MirroredAttrs = {};
  if (typeof a[ATTR_INDEX_HASH] === "string") out.hash = a[ATTR_INDEX_HASH];
  const payload = a[ATTR_INDEX];
  if (typeof payload === "string") out.payload = payload;
  else if (isObject(payload)) out.payload = canonicalJson(payload);
  return out;
}

function mirrorAttrs(record: ResolvedIndexRecord): JsonObject {
  return { [ATTR_INDEX]: canonicalJson(record.index), [ATTR_INDEX_HASH]: record.identity_hash };
}

export interface EnsureContext {
  store: Store;
  product: string;
  ownerId: string;
  clock: Clock;
  attrs: RootAttributes;
  /** Appends the index_ensured event to the run's WAL. */
  emit(eventType: string, record: JsonObject): Promise<unknown>;
  /** How long a process that lost the claim race waits for the winner (seconds of real time). */
  claimWaitS?: number;
  claimPollMs?: number;
}

function ensuredEvent(
  ctx: EnsureContext,
  runId: string,
  decl: ResolvedIndexDeclaration,
  hash: string,
  outcome: EnsureOutcome,
) {
  const groups = isObject(decl.index.groups) ? decl.index.groups : {};
  const kinds = new Set<string>();
  for (const g of Object.values(groups)) if (isObject(g) && typeof g.kind === "string") kinds.add(g.kind);
  return {
    schema_version: "v2",
    run_id: runId,
    product: ctx.product,
    identity_hash: hash,
    axis_kinds: [...kinds].sort(),
    groups: Object.keys(groups).sort(),
    outcome,
    timestamp: isoTimestamp(ctx.clock()),
  };
}

/**
 * Losing-process convergence: while another process holds `resolved_index:current` and keeps it fresh,
 * wait and retry; once it is released, evaluate precedence like everyone else (normally row 2,
 * matched_existing). A stale holder is never taken over: that is an operator's call (claims clear).
 */
export async function withIndexClaim<T>(
  ctx: EnsureContext,
  body: () => Promise<T>,
  claim = INDEX_CLAIM,
): Promise<T> {
  const domain = `${ctx.product}:${claim}`;
  const deadline = Date.now() + (ctx.claimWaitS ?? 30) * 1000;
  for (;;) {
    try {
      await acquire(ctx.store, domain, { ownerId: ctx.ownerId, product: ctx.product }, ctx.clock);
      break;
    } catch (e) {
      if (!(e instanceof ClaimConflict) || e.stale || Date.now() >= deadline) throw e;
      await sleep(ctx.claimPollMs ?? 50);
    }
  }
  try {
    return await body();
  } finally {
    await release(ctx.store, domain, ctx.ownerId, ctx.clock);
  }
}

function validateDeclaration(decl: ResolvedIndexDeclaration): void {
  if (!isObject(decl) || !isObject(decl.index)) {
    throw new SchemaError("declaration.index must be a JSON object", "/index", "resolved index declaration");
  }
  if (decl.items !== undefined && !Array.isArray(decl.items)) {
    throw new SchemaError("declaration.items must be an array", "/items", "resolved index declaration");
  }
}

/** Precedence rows evaluated in the facts file's order 6, 1, 2, 3, 4, 5, 7, under the index claim. */
export async function ensureResolvedIndex(
  ctx: EnsureContext,
  decl: ResolvedIndexDeclaration,
  runId: string,
  mode: "ensure" | "rebuild" = "ensure",
): Promise<EnsureResult> {
  validateDeclaration(decl);
  const declaredHash = resolvedIndexIdentityHash(decl.index, decl.items);
  return withIndexClaim(ctx, async () => {
    const record = await readResolvedIndexRecord(ctx.store); // row 6 and tamper detection throw here
    const mirror = await readMirror(ctx.attrs);
    const attrsPresent = mirror.hash !== undefined;
    const created: EnsureOutcome = mode === "rebuild" ? "rebuilt" : "created";
    const finish = async (outcome: EnsureOutcome, row: number, rec: ResolvedIndexRecord) => {
      await ctx.emit("index_ensured", ensuredEvent(ctx, runId, decl, declaredHash, outcome));
      return { outcome, identityHash: declaredHash, row, record: rec };
    };

    if (!record && (!attrsPresent || mode === "rebuild")) {
      // Row 1 (and rebuild from nothing). If a peer created the record without the claim, re-evaluate.
      const fresh = buildResolvedIndexRecord(decl, runId, ctx.clock());
      if (!(await ctx.store.putIfAbsent(INDEX_KEY, recordBytes(fresh)))) {
        throw new ManifestError(
          `${INDEX_KEY} appeared while the index claim was held (a writer ignored the claim)`,
          "concurrent-record",
          INDEX_KEY,
        );
      }
      await ctx.attrs.merge(mirrorAttrs(fresh));
      return finish(created, 1, fresh);
    }
    if (!record) {
      throw new ManifestError(
        `root attributes carry ${ATTR_INDEX_HASH}=${mirror.hash} but ${INDEX_KEY} is missing (row 4)`,
        "attrs-without-record",
        INDEX_KEY,
      );
    }
    const recordMatches = record.identity_hash === declaredHash;
    const attrsMatch =
      mirror.hash === declaredHash &&
      (mirror.payload === undefined || mirror.payload === canonicalJson(decl.index));
    if (recordMatches && attrsPresent && attrsMatch) {
      if (mode === "rebuild") return finish("rebuilt", 2, record);
      return finish("matched_existing", 2, record);
    }
    if (recordMatches && (!attrsPresent || mode === "rebuild")) {
      await ctx.attrs.merge(mirrorAttrs(record));
      return finish(created, 3, record);
    }
    if (!recordMatches) {
      await ctx.emit("index_ensured", ensuredEvent(ctx, runId, decl, declaredHash, "conflict_refused"));
      const diff = diffFields(record.index, decl.index, "/index");
      if (
        canonicalJson(record.items ?? null) !== canonicalJson(decl.items ? byCoordinate(decl.items) : null)
      ) {
        diff.push({ path: "/items", recorded: record.items ?? null, declared: decl.items ?? null });
      }
      const summary = diff.map(
        (d) => `${d.path}: ${canonicalJson(d.recorded ?? null)} -> ${canonicalJson(d.declared ?? null)}`,
      );
      throw new ResolvedIndexConflict(
        `${INDEX_KEY} (identity ${record.identity_hash}) disagrees with the declaration (identity ${declaredHash}) (row 5): ${summary.join("; ")}`,
        diff,
        record.identity_hash,
        declaredHash,
      );
    }
    throw new ManifestError(
      `root attribute ${ATTR_INDEX_HASH}=${mirror.hash} disagrees with ${INDEX_KEY} identity ${record.identity_hash} (row 7, attrs drift)`,
      "attrs-drift",
      INDEX_KEY,
    );
  });
}

export interface IndexVerification {
  record: "absent" | "ok";
  identityHash?: string;
  attrs: "absent" | "match" | "drift";
  attrsHash?: string;
}

/** Read-only check for `index verify`: throws the same ManifestErrors as ensure for row 6 and tampering. */
export async function verifyResolvedIndex(store: Store, attrs: RootAttributes): Promise<IndexVerification> {
  const record = await readResolvedIndexRecord(store);
  const mirror = await readMirror(attrs);
  const out: IndexVerification = { record: record ? "ok" : "absent", attrs: "absent" };
  if (record) out.identityHash = record.identity_hash;
  if (mirror.hash !== undefined) {
    out.attrsHash = mirror.hash;
    const payloadOk =
      record !== undefined &&
      (mirror.payload === undefined || mirror.payload === canonicalJson(record.index));
    out.attrs = record && mirror.hash === record.identity_hash && payloadOk ? "match" : "drift";
  }
  return out;
}

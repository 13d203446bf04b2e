import { setTimeout as sleep } from "node:timers/promises";
import { SchemaError, stringifyJsonExact, ZarrStreamError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { acquire, release } from "./claims.js";
import { type Clock, isObject, type JsonObject, parseDocument } from "./documents.js";
import { ClaimConflict, ManifestError, ResolvedIndexConflict } from "./errors.js";
import { diffFields, itemsByCoordinate, manifestItems, resolvedIndexIdentityHash } from "./identity.js";
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
  // The reference's record: items reduced to their four fields, ordered by str(coordinate_value).
  if (decl.items !== undefined) record.items = itemsByCoordinate(manifestItems(decl.items));
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
  if (!isObject(doc.index) || typeof doc.identity_hash !== "string") {
    throw new ManifestError(`${INDEX_KEY}: index or identity_hash malformed`, "unreadable-record", INDEX_KEY);
  }
  // Items are read as the reference reads them: their four fields, any other key dropped (and null is
  // no items). A key the format does not name is ignored, so it cannot make the hash mismatch.
  let items: JsonObject[] | undefined;
  try {
    items = doc.items === undefined || doc.items === null ? undefined : manifestItems(doc.items);
  } catch (e) {
    if (!(e instanceof ZarrStreamError)) throw e;
    throw new ManifestError(`${INDEX_KEY}: ${e.message}`, "unreadable-record", INDEX_KEY);
  }
  const recomputed = resolvedIndexIdentityHash(doc.index, items);
  if (recomputed !== doc.identity_hash) {
    throw new ManifestError(
      `${INDEX_KEY}: identity-hash mismatch: recorded ${doc.identity_hash}, content hashes to ${recomputed} (tampered?)`,
      "identity-hash-mismatch",
      INDEX_KEY,
    );
  }
  const record = { ...doc } as unknown as ResolvedIndexRecord;
  if (items === undefined) delete record.items;
  else record.items = items;
  return record;
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
 * Runs `body` under the claim `<product>:<claim>`. While another process holds the claim, `whenHeld` is
 * asked first, as the reference's losing writer does: it settles the call from what is already on disk
 * (the record and the attrs agree with the declaration: matched_existing; they disagree: the error) or
 * answers undefined when there is nothing to judge yet (no record), and then we wait for the claim: while
 * its holder keeps it fresh, up to claimWaitS; a stale holder is never taken over (`claims clear`).
 */
export async function withIndexClaim<T>(
  ctx: EnsureContext,
  body: () => Promise<T>,
  claim: string,
  whenHeld: () => Promise<T | undefined>,
): Promise<T> {
  const domain = `${ctx.product}:${claim}`;
  const deadline = Date.now() + (ctx.claimWaitS ?? 30) * 1000;
  for (;;) {
    try {
      await acquire(ctx.store, domain, { ownerId: ctx.ownerId, product: ctx.product }, ctx.clock);
      break;
    } catch (e) {
      if (!(e instanceof ClaimConflict)) throw e;
      const settled = await whenHeld();
      if (settled !== undefined) return settled;
      if (e.stale || Date.now() >= deadline) throw e;
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
  if (decl.items !== undefined) manifestItems(decl.items);
}

/** The row-5 refusal: the index_ensured conflict_refused event, then the conflict with its field diff. */
async function refuseConflict(
  ctx: EnsureContext,
  runId: string,
  decl: ResolvedIndexDeclaration,
  declaredHash: string,
  record: ResolvedIndexRecord,
): Promise<never> {
  await ctx.emit("index_ensured", ensuredEvent(ctx, runId, decl, declaredHash, "conflict_refused"));
  const diff = diffFields(record.index, decl.index, "/index");
  const declaredItems = decl.items ? itemsByCoordinate(manifestItems(decl.items)) : null;
  if (canonicalJson(record.items ?? null) !== canonicalJson(declaredItems)) {
    diff.push({ path: "/items", recorded: record.items ?? null, declared: declaredItems });
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

function driftError(mirror: MirroredAttrs, record: ResolvedIndexRecord): ManifestError {
  return new ManifestError(
    `root attribute ${ATTR_INDEX_HASH}=${mirror.hash} disagrees with ${INDEX_KEY} identity ${record.identity_hash} (row 7, attrs drift)`,
    "attrs-drift",
    INDEX_KEY,
  );
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
  const created: EnsureOutcome = mode === "rebuild" ? "rebuilt" : "created";
  const matched: EnsureOutcome = mode === "rebuild" ? "rebuilt" : "matched_existing";
  const finish = async (outcome: EnsureOutcome, row: number, rec: ResolvedIndexRecord) => {
    await ctx.emit("index_ensured", ensuredEvent(ctx, runId, decl, declaredHash, outcome));
    return { outcome, identityHash: declaredHash, row, record: rec };
  };
  const attrsMatch = (mirror: MirroredAttrs) =>
    mirror.hash === declaredHash &&
    (mirror.payload === undefined || mirror.payload === canonicalJson(decl.index));

  // The reference's losing writer: whoever holds the claim, a record that already agrees settles it.
  const whenHeld = async (): Promise<EnsureResult | undefined> => {
    const record = await readResolvedIndexRecord(ctx.store);
    if (!record) return undefined;
    if (record.identity_hash !== declaredHash) return refuseConflict(ctx, runId, decl, declaredHash, record);
    const mirror = await readMirror(ctx.attrs);
    if (mirror.hash === undefined) {
      // The reference re-mirrors here too: the value is the record's, whoever writes it.
      await ctx.attrs.merge(mirrorAttrs(record));
      return finish(matched, 3, record);
    }
    if (attrsMatch(mirror)) return finish(matched, 2, record);
    throw driftError(mirror, record);
  };

  return withIndexClaim(
    ctx,
    async () => {
      const record = await readResolvedIndexRecord(ctx.store); // row 6 and tamper detection throw here
      const mirror = await readMirror(ctx.attrs);
      const attrsPresent = mirror.hash !== undefined;

      if (!record) {
        // Row 4 (attrs without a record) is refused, as by the reference, except by a rebuild whose
        // declaration the attrs verify: their hash is the declaration's and their payload its index.
        const adopt =
          mode === "rebuild" && mirror.hash === declaredHash && mirror.payload === canonicalJson(decl.index);
        if (attrsPresent && !adopt) {
          throw new ManifestError(
            `root attributes carry ${ATTR_INDEX_HASH}=${mirror.hash} but ${INDEX_KEY} is missing (row 4)${mode === "rebuild" ? "; they do not verify against the declaration, so nothing is rebuilt from them" : ""}`,
            "attrs-without-record",
            INDEX_KEY,
          );
        }
        // Row 1 (or a rebuild from verified attrs). If a peer created the record without the claim, refuse.
        const fresh = buildResolvedIndexRecord(decl, runId, ctx.clock());
        if (!(await ctx.store.putIfAbsent(INDEX_KEY, recordBytes(fresh)))) {
          throw new ManifestError(
            `${INDEX_KEY} appeared while the index claim was held (a writer ignored the claim)`,
            "concurrent-record",
            INDEX_KEY,
          );
        }
        await ctx.attrs.merge(mirrorAttrs(fresh));
        return finish(created, attrsPresent ? 4 : 1, fresh);
      }
      const recordMatches = record.identity_hash === declaredHash;
      if (recordMatches && attrsPresent && attrsMatch(mirror)) return finish(matched, 2, record);
      if (recordMatches && (!attrsPresent || mode === "rebuild")) {
        // Row 3, and a rebuild's repair of drifted attrs from the record that matches the declaration.
        await ctx.attrs.merge(mirrorAttrs(record));
        return finish(created, 3, record);
      }
      if (!recordMatches) return refuseConflict(ctx, runId, decl, declaredHash, record);
      throw driftError(mirror, record);
    },
    INDEX_CLAIM,
    whenHeld,
  );
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

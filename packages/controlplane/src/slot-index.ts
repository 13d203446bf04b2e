import { SchemaError, stringifyJsonExact, ZarrStreamError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { isObject, type JsonObject, parseDocument } from "./documents.js";
import { ManifestError, ResolvedIndexConflict } from "./errors.js";
import {
  diffFields,
  type SlotIndexModel,
  slotIndexCanonicalModel,
  slotIndexIdentityHash,
} from "./identity.js";
import { SLOT_INDEX_KEY } from "./layout.js";
import { canonicalJson } from "./pyjson.js";
import { type EnsureContext, isoTimestamp, recordBytes, withIndexClaim } from "./resolved-index.js";

export interface SlotIndexRecord {
  identity_hash: string;
  model: JsonObject;
  recorded_at: string;
  recorded_by_run_id: string;
  schema_version: "v1";
}

export async function readSlotIndexRecord(store: Store): Promise<SlotIndexRecord | undefined> {
  const bytes = await store.get(SLOT_INDEX_KEY);
  if (bytes === undefined) return undefined;
  let doc: JsonObject;
  try {
    doc = parseDocument(bytes, SLOT_INDEX_KEY);
  } catch (e) {
    throw new ManifestError(
      `${SLOT_INDEX_KEY}: ${(e as Error).message}`,
      "unreadable-record",
      SLOT_INDEX_KEY,
    );
  }
  if (doc.schema_version !== "v1") {
    throw new ManifestError(
      `${SLOT_INDEX_KEY}: schema_version ${stringifyJsonExact(doc.schema_version)} is not supported (want "v1")`,
      "unsupported-schema-version",
      SLOT_INDEX_KEY,
    );
  }
  if (!isObject(doc.model) || typeof doc.identity_hash !== "string") {
    throw new ManifestError(
      `${SLOT_INDEX_KEY}: model or identity_hash malformed`,
      "unreadable-record",
      SLOT_INDEX_KEY,
    );
  }
  // The model is read as the reference reads it: its canonical fields, any other key dropped.
  let recomputed: string;
  try {
    recomputed = slotIndexIdentityHash(doc.model as SlotIndexModel);
  } catch (e) {
    if (!(e instanceof ZarrStreamError)) throw e;
    throw new ManifestError(`${SLOT_INDEX_KEY}: ${e.message}`, "unreadable-record", SLOT_INDEX_KEY);
  }
  if (recomputed !== doc.identity_hash) {
    throw new ManifestError(
      `${SLOT_INDEX_KEY}: identity-hash mismatch: recorded ${doc.identity_hash}, content hashes to ${recomputed} (tampered?)`,
      "identity-hash-mismatch",
      SLOT_INDEX_KEY,
    );
  }
  return doc as unknown as SlotIndexRecord;
}

export type SlotIndexOutcome = "recorded" | "verified";

export const ATTR_SLOT_MODEL = "firecube_slot_index_model";
export const ATTR_SLOT_MODEL_HASH = "firecube_slot_index_model_identity_hash";
export const SLOT_INDEX_CLAIM = "slot_index_model:current";

/** The mirror of a record: its model in canonical form (what the reference writes), and its hash. */
function slotMirror(record: SlotIndexRecord): JsonObject {
  return {
    [ATTR_SLOT_MODEL]: canonicalJson(slotIndexCanonicalModel(record.model as SlotIndexModel)),
    [ATTR_SLOT_MODEL_HASH]: record.identity_hash,
  };
}

/**
 * The same precedence rows as the resolved index (seed 003: "mirrored to store attributes the same way"),
 * evaluated under the `slot_index_model:current` claim: 6 unsupported record (on read); 1 nothing yet:
 * write the record and mirror, `recorded`; 2 record and attrs match: `verified`; 3 record matches, attrs
 * absent: re-mirror, `verified`; 4 attrs without a record: ManifestError; 5 record differs from the
 * declared model: ResolvedIndexConflict; 7 record matches, attrs differ: ManifestError (drift). Models are
 * compared in their canonical form, so a key the format does not name (in the model or a group) changes
 * nothing. While another process holds the claim, a record and attrs that already agree settle the call
 * as they do for the reference's losing writer.
 */
export async function ensureSlotIndexModel(
  ctx: EnsureContext,
  model: SlotIndexModel,
  runId: string,
): Promise<{ outcome: SlotIndexOutcome; identityHash: string; row: number }> {
  if (model?.schema_version !== undefined && model.schema_version !== "v1") {
    throw new SchemaError(
      `slot-index model schema_version ${stringifyJsonExact(model.schema_version)} is not "v1" (the only model the format hashes)`,
      "/model/schema_version",
      "slot index",
    );
  }
  const canonical = slotIndexCanonicalModel(model);
  const hash = slotIndexIdentityHash(model);
  const event = (type: string) => ctx.emit(type, { identity_hash: hash, model_name: model.name });
  const verified = async (row: number) => {
    await event("slot_index_model_verified");
    return { outcome: "verified" as const, identityHash: hash, row };
  };
  const readAttrs = async () => {
    const attrs = (await ctx.attrs.read()) ?? {};
    const attrsHash =
      typeof attrs[ATTR_SLOT_MODEL_HASH] === "string" ? attrs[ATTR_SLOT_MODEL_HASH] : undefined;
    const modelText = typeof attrs[ATTR_SLOT_MODEL] === "string" ? attrs[ATTR_SLOT_MODEL] : undefined;
    return { attrsHash, modelText };
  };
  const attrsAgree = (attrsHash: string, modelText: string | undefined) =>
    attrsHash === hash && (modelText === undefined || modelText === canonicalJson(canonical));
  const conflict = (existing: SlotIndexRecord) =>
    new ResolvedIndexConflict(
      `${SLOT_INDEX_KEY} (identity ${existing.identity_hash}) disagrees with the declared model (identity ${hash}) (row 5)`,
      diffFields(slotIndexCanonicalModel(existing.model as SlotIndexModel), canonical, "/model"),
      existing.identity_hash,
      hash,
    );
  const drift = (attrsHash: string, existing: SlotIndexRecord) =>
    new ManifestError(
      `root attribute ${ATTR_SLOT_MODEL_HASH}=${attrsHash} disagrees with ${SLOT_INDEX_KEY} identity ${existing.identity_hash} (row 7, attrs drift)`,
      "attrs-drift",
      SLOT_INDEX_KEY,
    );
  const whenHeld = async () => {
    const existing = await readSlotIndexRecord(ctx.store);
    if (!existing) return undefined;
    if (existing.identity_hash !== hash) throw conflict(existing);
    const { attrsHash, modelText } = await readAttrs();
    if (attrsHash === undefined) {
      await ctx.attrs.merge(slotMirror(existing));
      return verified(3);
    }
    if (attrsAgree(attrsHash, modelText)) return verified(2);
    throw drift(attrsHash, existing);
  };
  return withIndexClaim(
    ctx,
    async () => {
      const existing = await readSlotIndexRecord(ctx.store);
      const { attrsHash, modelText } = await readAttrs();
      if (!existing && attrsHash === undefined) {
        const record: SlotIndexRecord = {
          identity_hash: hash,
          model: canonical,
          recorded_at: isoTimestamp(ctx.clock()),
          recorded_by_run_id: runId,
          schema_version: "v1",
        };
        if (!(await ctx.store.putIfAbsent(SLOT_INDEX_KEY, recordBytes(record)))) {
          throw new ManifestError(
            `${SLOT_INDEX_KEY} appeared while the slot-index claim was held (a writer ignored the claim)`,
            "concurrent-record",
            SLOT_INDEX_KEY,
          );
        }
        await ctx.attrs.merge(slotMirror(record));
        await event("slot_index_model_recorded");
        return { outcome: "recorded", identityHash: hash, row: 1 };
      }
      if (!existing) {
        throw new ManifestError(
          `root attributes carry ${ATTR_SLOT_MODEL_HASH}=${attrsHash} but ${SLOT_INDEX_KEY} is missing (row 4)`,
          "attrs-without-record",
          SLOT_INDEX_KEY,
        );
      }
      if (existing.identity_hash !== hash) throw conflict(existing);
      if (attrsHash === undefined) {
        await ctx.attrs.merge(slotMirror(existing));
        return verified(3);
      }
      if (attrsAgree(attrsHash, modelText)) return verified(2);
      throw drift(attrsHash, existing);
    },
    SLOT_INDEX_CLAIM,
    whenHeld,
  );
}

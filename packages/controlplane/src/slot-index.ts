import { stringifyJsonExact } from "@zarr-stream/spec";
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
  const recomputed = slotIndexIdentityHash(doc.model as SlotIndexModel);
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

function slotMirror(record: SlotIndexRecord): JsonObject {
  return { [ATTR_SLOT_MODEL]: canonicalJson(record.model), [ATTR_SLOT_MODEL_HASH]: record.identity_hash };
}

/**
 * The same precedence rows as the resolved index (seed 003: "mirrored to store attributes the same way"),
 * evaluated under the `slot_index_model:current` claim: 6 unsupported record (on read); 1 nothing yet:
 * write the record and mirror, `recorded`; 2 record and attrs match: `verified`; 3 record matches, attrs
 * absent: re-mirror, `verified`; 4 attrs without a record: ManifestError; 5 record differs from the
 * declared model: ResolvedIndexConflict; 7 record matches, attrs differ: ManifestError (drift).
 */
export async function ensureSlotIndexModel(
  ctx: EnsureContext,
  model: SlotIndexModel,
  runId: string,
): Promise<{ outcome: SlotIndexOutcome; identityHash: string; row: number }> {
  const canonical = slotIndexCanonicalModel(model);
  const hash = slotIndexIdentityHash(model);
  return withIndexClaim(
    ctx,
    async () => {
      const existing = await readSlotIndexRecord(ctx.store);
      const attrs = (await ctx.attrs.read()) ?? {};
      const attrsHash =
        typeof attrs[ATTR_SLOT_MODEL_HASH] === "string" ? attrs[ATTR_SLOT_MODEL_HASH] : undefined;
      const attrsModel = attrs[ATTR_SLOT_MODEL];
      const verified = async (row: number) => {
        await ctx.emit("slot_index_model_verified", { run_id: runId, identity_hash: hash, name: model.name });
        return { outcome: "verified" as const, identityHash: hash, row };
      };
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
        await ctx.emit("slot_index_model_recorded", { run_id: runId, identity_hash: hash, name: model.name });
        return { outcome: "recorded", identityHash: hash, row: 1 };
      }
      if (!existing) {
        throw new ManifestError(
          `root attributes carry ${ATTR_SLOT_MODEL_HASH}=${attrsHash} but ${SLOT_INDEX_KEY} is missing (row 4)`,
          "attrs-without-record",
          SLOT_INDEX_KEY,
        );
      }
      if (existing.identity_hash !== hash) {
        const diff = diffFields(existing.model, canonical, "/model");
        throw new ResolvedIndexConflict(
          `${SLOT_INDEX_KEY} (identity ${existing.identity_hash}) disagrees with the declared model (identity ${hash}) (row 5)`,
          diff,
          existing.identity_hash,
          hash,
        );
      }
      if (attrsHash === undefined) {
        await ctx.attrs.merge(slotMirror(existing));
        return verified(3);
      }
      const modelText = typeof attrsModel === "string" ? attrsModel : undefined;
      if (attrsHash === hash && (modelText === undefined || modelText === canonicalJson(existing.model))) {
        return verified(2);
      }
      throw new ManifestError(
        `root attribute ${ATTR_SLOT_MODEL_HASH}=${attrsHash} disagrees with ${SLOT_INDEX_KEY} identity ${existing.identity_hash} (row 7, attrs drift)`,
        "attrs-drift",
        SLOT_INDEX_KEY,
      );
    },
    SLOT_INDEX_CLAIM,
  );
}

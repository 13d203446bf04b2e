import type { Store } from "@zarr-stream/store";
import { type Clock, isObject, type JsonObject, parseExactDocument } from "./documents.js";
import { ManifestError, ResolvedIndexConflict } from "./errors.js";
import {
  diffFields,
  type SlotIndexModel,
  slotIndexCanonicalModel,
  slotIndexIdentityHash,
} from "./identity.js";
import { SLOT_INDEX_KEY } from "./layout.js";
import { isoTimestamp, recordBytes } from "./resolved-index.js";

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
    doc = parseExactDocument(bytes, SLOT_INDEX_KEY);
  } catch (e) {
    throw new ManifestError(
      `${SLOT_INDEX_KEY}: ${(e as Error).message}`,
      "unreadable-record",
      SLOT_INDEX_KEY,
    );
  }
  if (doc.schema_version !== "v1") {
    throw new ManifestError(
      `${SLOT_INDEX_KEY}: schema_version ${JSON.stringify(doc.schema_version)} is not supported (want "v1")`,
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

/**
 * Writes slot_index/current.json once (create-only) or verifies it; emits slot_index_model_recorded or
 * slot_index_model_verified. A different model is a conflict, never an overwrite.
 */
export async function ensureSlotIndexModel(
  store: Store,
  model: SlotIndexModel,
  runId: string,
  clock: Clock,
  emit: (eventType: string, record: JsonObject) => Promise<unknown>,
): Promise<{ outcome: SlotIndexOutcome; identityHash: string }> {
  const canonical = slotIndexCanonicalModel(model);
  const hash = slotIndexIdentityHash(model);
  let existing = await readSlotIndexRecord(store);
  if (!existing) {
    const record: SlotIndexRecord = {
      identity_hash: hash,
      model: canonical,
      recorded_at: isoTimestamp(clock()),
      recorded_by_run_id: runId,
      schema_version: "v1",
    };
    if (await store.putIfAbsent(SLOT_INDEX_KEY, recordBytes(record))) {
      await emit("slot_index_model_recorded", { run_id: runId, identity_hash: hash, name: model.name });
      return { outcome: "recorded", identityHash: hash };
    }
    existing = await readSlotIndexRecord(store);
  }
  if (existing && existing.identity_hash !== hash) {
    const diff = diffFields(existing.model, canonical, "/model");
    throw new ResolvedIndexConflict(
      `${SLOT_INDEX_KEY} (identity ${existing.identity_hash}) disagrees with the declared model (identity ${hash})`,
      diff,
      existing.identity_hash,
      hash,
    );
  }
  await emit("slot_index_model_verified", { run_id: runId, identity_hash: hash, name: model.name });
  return { outcome: "verified", identityHash: hash };
}

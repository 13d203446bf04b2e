import { createHash } from "node:crypto";
import { SchemaError } from "@zarr-stream/spec";
import { isObject, type JsonObject } from "./documents.js";
import { canonicalJson, compareCodePoints, utf8 } from "./pyjson.js";

function sha256Hex(text: string): string {
  return createHash("sha256").update(utf8(text)).digest("hex");
}

function sortedItems(items: JsonObject[]): JsonObject[] {
  return items
    .map((item, i) => {
      if (!isObject(item) || typeof item.identity_hash !== "string") {
        throw new SchemaError(
          `items[${i}] must be an object with a string identity_hash`,
          `/items/${i}/identity_hash`,
          "resolved index",
        );
      }
      return item;
    })
    .sort((a, b) => compareCodePoints(a.identity_hash as string, b.identity_hash as string));
}

/**
 * sha256 of the canonical index (sorted keys, compact, raw UTF-8); with items it covers
 * {"index", "items" sorted by identity_hash}, so input order does not matter and adding or removing an item does.
 */
export function resolvedIndexIdentityHash(index: JsonObject, items?: JsonObject[]): string {
  if (!isObject(index))
    throw new SchemaError("resolved index must be a JSON object", "/index", "resolved index");
  if (items === undefined) return sha256Hex(canonicalJson(index));
  return sha256Hex(canonicalJson({ index, items: sortedItems(items) }));
}

export interface SlotIndexModel {
  name: string;
  epoch: string;
  time_unit: string | null;
  schema_version?: string;
  groups: Record<string, { cadence_s: number; mode: string; [extra: string]: unknown }>;
  [extra: string]: unknown;
}

/** The fields the slot-index identity covers; anything else in the model does not change its identity. */
export function slotIndexCanonicalModel(model: SlotIndexModel): JsonObject {
  if (!isObject(model) || !isObject(model.groups)) {
    throw new SchemaError("slot-index model must be an object with groups", "/model/groups", "slot index");
  }
  const groups: JsonObject = {};
  for (const [name, g] of Object.entries(model.groups)) {
    if (!isObject(g))
      throw new SchemaError(`group ${name} must be an object`, `/model/groups/${name}`, "slot index");
    groups[name] = { cadence_s: g.cadence_s, mode: g.mode };
  }
  return {
    epoch: model.epoch,
    groups,
    name: model.name,
    schema_version: model.schema_version ?? "v1",
    time_unit: model.time_unit ?? null,
  };
}

export function slotIndexIdentityHash(model: SlotIndexModel): string {
  return sha256Hex(canonicalJson(slotIndexCanonicalModel(model)));
}

export interface FieldDiffEntry {
  path: string;
  recorded: unknown;
  declared: unknown;
}

/** Field-by-field differences (objects recursively, arrays and scalars compared whole). */
export function diffFields(recorded: unknown, declared: unknown, path = ""): FieldDiffEntry[] {
  if (isObject(recorded) && isObject(declared)) {
    const keys = [...new Set([...Object.keys(recorded), ...Object.keys(declared)])].sort(compareCodePoints);
    return keys.flatMap((k) => diffFields(recorded[k], declared[k], `${path}/${k}`));
  }
  const same =
    recorded === undefined || declared === undefined
      ? recorded === declared
      : canonicalJson(recorded) === canonicalJson(declared);
  return same ? [] : [{ path: path || "/", recorded, declared }];
}

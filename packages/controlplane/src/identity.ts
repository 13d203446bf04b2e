import { createHash } from "node:crypto";
import { IntegralFloat, pythonFloatRepr, SchemaError } from "@zarr-stream/spec";
import { isObject, type JsonObject } from "./documents.js";
import { canonicalJson, compareCodePoints, utf8 } from "./pyjson.js";

function sha256Hex(text: string): string {
  return createHash("sha256").update(utf8(text)).digest("hex");
}

const ITEM_FIELDS = ["identity_hash", "coordinate_value", "source_ref", "source_ref_kind"] as const;
const SOURCE_REF_KINDS = new Set(["path", "uri", "identifier"]);

/**
 * The item manifest as the reference reads it (`_parse_manifest_items`): each item an object with
 * identity_hash, coordinate_value, source_ref and source_ref_kind (path, uri or identifier), reduced to
 * those four fields. A key an item carries beyond them is dropped, so it changes neither the identity
 * hash nor the record written. A bad item is a SchemaError naming it.
 */
export function manifestItems(items: unknown): JsonObject[] {
  if (!Array.isArray(items)) throw new SchemaError("items must be an array", "/items", "resolved index");
  return items.map((item, i) => {
    if (!isObject(item))
      throw new SchemaError(`items[${i}] must be an object`, `/items/${i}`, "resolved index");
    const missing = ITEM_FIELDS.filter((f) => !(f in item));
    if (missing.length > 0) {
      throw new SchemaError(`items[${i}] misses ${missing.join(", ")}`, `/items/${i}`, "resolved index");
    }
    if (typeof item.identity_hash !== "string") {
      throw new SchemaError(
        `items[${i}].identity_hash must be a string`,
        `/items/${i}/identity_hash`,
        "resolved index",
      );
    }
    if (typeof item.source_ref_kind !== "string" || !SOURCE_REF_KINDS.has(item.source_ref_kind)) {
      throw new SchemaError(
        `items[${i}].source_ref_kind must be path, uri or identifier`,
        `/items/${i}/source_ref_kind`,
        "resolved index",
      );
    }
    return Object.fromEntries(ITEM_FIELDS.map((f) => [f, item[f]]));
  });
}

/** Python's `str()` of a JSON value read exactly: how the reference orders items by coordinate value. */
export function pythonStr(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "bigint") return v.toString();
  if (v instanceof IntegralFloat) return pythonFloatRepr(v.value);
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : pythonFloatRepr(v);
  if (typeof v === "boolean") return v ? "True" : "False";
  if (v === null) return "None";
  return canonicalJson(v);
}

/** Items in the record's order, the reference's: by `str(coordinate_value)`, as strings compare. */
export function itemsByCoordinate(items: JsonObject[]): JsonObject[] {
  return [...items].sort((a, b) =>
    compareCodePoints(pythonStr(a.coordinate_value), pythonStr(b.coordinate_value)),
  );
}

/**
 * sha256 of the canonical index (sorted keys, compact, raw UTF-8); with items it covers
 * {"index", "items" sorted by identity_hash}, so input order does not matter and adding or removing an item does.
 */
export function resolvedIndexIdentityHash(index: JsonObject, items?: JsonObject[]): string {
  if (!isObject(index))
    throw new SchemaError("resolved index must be a JSON object", "/index", "resolved index");
  if (items === undefined) return sha256Hex(canonicalJson(index));
  const sorted = manifestItems(items).sort((a, b) =>
    compareCodePoints(a.identity_hash as string, b.identity_hash as string),
  );
  return sha256Hex(canonicalJson({ index, items: sorted }));
}

export interface SlotIndexModel {
  name: string;
  epoch: string;
  time_unit: string | null;
  schema_version?: string;
  groups: Record<string, { cadence_s: number; mode: string; [extra: string]: unknown }>;
  [extra: string]: unknown;
}

/**
 * The model the slot-index identity covers, as the reference rebuilds it from any record or declaration
 * (`SlotIndexModel.canonical_bytes`): name, epoch, time_unit and each group's cadence_s and mode, with
 * `schema_version` always "v1". Any other key of the model or of a group is dropped, so it does not change
 * the identity. The reference's checks apply: non-empty name, epoch and groups, a positive integral
 * cadence_s, mode exact or floor.
 */
export function slotIndexCanonicalModel(model: SlotIndexModel): JsonObject {
  const bad = (why: string, pointer: string): never => {
    throw new SchemaError(`slot-index model: ${why}`, pointer, "slot index");
  };
  if (!isObject(model) || !isObject(model.groups)) bad("must be an object with groups", "/model/groups");
  if (typeof model.name !== "string" || model.name === "")
    bad("name must be a non-empty string", "/model/name");
  if (typeof model.epoch !== "string" || model.epoch === "")
    bad("epoch must be a non-empty string", "/model/epoch");
  const timeUnit = model.time_unit ?? null;
  if (timeUnit !== null && typeof timeUnit !== "string")
    bad("time_unit must be a string or null", "/model/time_unit");
  const groups: JsonObject = {};
  const names = Object.keys(model.groups).sort(compareCodePoints);
  if (names.length === 0) bad("groups must not be empty", "/model/groups");
  for (const name of names) {
    const g = model.groups[name];
    if (name === "") bad("group names must be non-empty", "/model/groups");
    if (!isObject(g)) bad(`group ${name} must be an object`, `/model/groups/${name}`);
    const cadence = g!.cadence_s as unknown;
    const integral =
      (typeof cadence === "number" && Number.isInteger(cadence) && cadence > 0) ||
      (typeof cadence === "bigint" && cadence > 0n);
    if (!integral)
      bad(`group ${name}: cadence_s must be a positive integer`, `/model/groups/${name}/cadence_s`);
    if (g!.mode !== "exact" && g!.mode !== "floor")
      bad(`group ${name}: mode must be exact or floor`, `/model/groups/${name}/mode`);
    groups[name] = { cadence_s: cadence, mode: g!.mode };
  }
  return { epoch: model.epoch, groups, name: model.name, schema_version: "v1", time_unit: timeUnit };
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

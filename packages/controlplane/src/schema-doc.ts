import { stringifyJsonExact } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type Clock, type JsonObject, parseDocument } from "./documents.js";
import { ControlPlaneCorrupt } from "./errors.js";
import { SCHEMA_KEY } from "./layout.js";
import { pyDumps, TIMESTAMP_KEYS, utf8 } from "./pyjson.js";

/** The control plane's schema.json, when there is one; anything but v2 / chunkmanager-v2 is corrupt. */
export async function readSchemaDoc(store: Store): Promise<JsonObject | undefined> {
  const bytes = await store.get(SCHEMA_KEY);
  if (bytes === undefined) return undefined;
  const doc = parseDocument(bytes, SCHEMA_KEY);
  if (doc.schema_version !== "v2" || doc.layout !== "chunkmanager-v2") {
    throw new ControlPlaneCorrupt(
      `${SCHEMA_KEY}: want schema_version "v2" and layout "chunkmanager-v2", got ${stringifyJsonExact(doc.schema_version)} / ${stringifyJsonExact(doc.layout)}`,
      SCHEMA_KEY,
    );
  }
  return doc;
}

/** schema.json is written once, create-only, by the first run; a later run checks the one it finds. */
export async function ensureSchemaDoc(store: Store, clock: Clock): Promise<void> {
  const doc = { schema_version: "v2", layout: "chunkmanager-v2", created_at: clock() };
  const text = pyDumps(doc, {
    ensureAscii: true,
    sortKeys: false,
    spaced: true,
    floatKeys: TIMESTAMP_KEYS,
  });
  if (!(await store.putIfAbsent(SCHEMA_KEY, utf8(text)))) await readSchemaDoc(store);
}

import { stringifyJsonExact } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { isObject, type JsonObject, parseDocument } from "./documents.js";
import { utf8 } from "./pyjson.js";

/** Where the mirrored identity lives: the Zarr root group's attributes. Injectable so a writer can own zarr.json. */
export interface RootAttributes {
  /** The root attributes, or undefined when there is no root metadata yet. */
  read(): Promise<JsonObject | undefined>;
  /** Sets the given attributes, keeping all others. */
  merge(attrs: JsonObject): Promise<void>;
}

/**
 * Reads and rewrites `zarr.json` at the store root (atomic put); creates a bare v3 group when absent. The
 * rewrite keeps every other attribute's numbers as read (an int64 attribute is not rounded to a double).
 */
export function zarrJsonAttributes(store: Store, key = "zarr.json"): RootAttributes {
  return {
    async read() {
      const bytes = await store.get(key);
      if (bytes === undefined) return undefined;
      const doc = parseDocument(bytes, key);
      return isObject(doc.attributes) ? doc.attributes : {};
    },
    async merge(attrs) {
      const bytes = await store.get(key);
      const doc: JsonObject =
        bytes === undefined ? { zarr_format: 3, node_type: "group" } : parseDocument(bytes, key);
      doc.attributes = { ...(isObject(doc.attributes) ? doc.attributes : {}), ...attrs };
      await store.put(key, utf8(`${stringifyJsonExact(doc, 2)}\n`));
    },
  };
}

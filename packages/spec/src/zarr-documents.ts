import * as precompiled from "#precompiled-validators";
import { SchemaError } from "./errors.js";
import { zarrArrayJsonSchema, zarrGroupJsonSchema } from "./schemas/zarr.js";
import { makeValidator } from "./validate.js";
import type { ZarrArrayMetadata, ZarrGroupMetadata } from "./zarr-metadata.js";

const ARRAY = "zarr.json";
const GROUP = "group zarr.json";
const checkArray = /* @__PURE__ */ makeValidator<ZarrArrayMetadata>(
  zarrArrayJsonSchema,
  ARRAY,
  precompiled.zarrArray,
);
const checkGroup = /* @__PURE__ */ makeValidator<ZarrGroupMetadata>(
  zarrGroupJsonSchema,
  GROUP,
  precompiled.zarrGroup,
);

/** The same failure, named after the caller's document (a store key) instead of the generic name. */
function renamed<T>(check: (value: unknown) => T, generic: string, value: unknown, document: string): T {
  try {
    return check(value);
  } catch (e) {
    if (!(e instanceof SchemaError) || document === generic) throw e;
    const reason = e.message.slice(generic.length + 2);
    throw new SchemaError(`${document}: ${reason}`, e.pointer, document);
  }
}

/**
 * An array's zarr.json from untrusted input, checked against the Zarr v3 core schema. Throws SchemaError
 * naming `document` (the store key, say) and the JSON pointer that failed.
 */
export function validateZarrArrayMetadata(value: unknown, document = ARRAY): ZarrArrayMetadata {
  return renamed(checkArray, ARRAY, value, document);
}

/** A group's zarr.json from untrusted input, checked against the Zarr v3 core schema. */
export function validateZarrGroupMetadata(value: unknown, document = GROUP): ZarrGroupMetadata {
  return renamed(checkGroup, GROUP, value, document);
}

/** JSON Schema fragments shared by the documents of seed 000 (draft 2020-12, strict-mode clean). */

export const nonNegativeInt = { type: "integer", minimum: 0 } as const;
export const positiveInt = { type: "integer", minimum: 1 } as const;

/**
 * Zarr v3 node-name rules (non-empty, no "/", not "." or "..", no "__" prefix) plus the names the store
 * layout reserves at the group root, since every dim, variable and static becomes an array there.
 */
export const nodeName = {
  type: "string",
  minLength: 1,
  pattern: "^(?!\\.{1,2}$)(?!__)(?!(blobs|zarr\\.json|output_manifest\\.json)$)[^/]+$",
} as const;

export const streamDType = { enum: ["float64", "float32", "int32", "int64", "uint8"] } as const;
export const readerDType = {
  enum: ["float64", "float32", "int32", "int64", "uint8", "uint32", "uint64"],
} as const;
export const profile = { enum: ["diagnostic", "checkpoint", "wasm"] } as const;
export const attrs = { type: "object" } as const;

export const fingerprint = { type: "string", pattern: "^sha256:[0-9a-f]{64}$" } as const;

/** Seed §7: [A-Za-z0-9._-]+ and not "." or "..". */
export const blobKey = { type: "string", pattern: "^(?!\\.{1,2}$)[A-Za-z0-9._-]+$" } as const;

export const shape = { type: "object", propertyNames: nodeName, additionalProperties: positiveInt } as const;

export function variableSpec(dtype: object) {
  return {
    type: "object",
    properties: {
      name: nodeName,
      dims: { type: "array", items: nodeName },
      dtype,
      attrs,
    },
    required: ["name", "dims", "dtype"],
    additionalProperties: false,
  } as const;
}

export const region = {
  type: "object",
  propertyNames: nodeName,
  additionalProperties: {
    type: "array",
    prefixItems: [nonNegativeInt, nonNegativeInt],
    minItems: 2,
    items: false,
  },
} as const;

/**
 * A blob reference; `record` is present exactly when scope is "record" (if/then/else rather than oneOf,
 * so a failure points at the offending member instead of at a branch).
 */
export function blobRef(withWriter: boolean) {
  const writer = withWriter ? { writer: nonNegativeInt } : {};
  return {
    type: "object",
    properties: { scope: { enum: ["static", "record"] }, record: nonNegativeInt, ...writer, key: blobKey },
    required: withWriter ? ["scope", "writer", "key"] : ["scope", "key"],
    additionalProperties: false,
    if: { type: "object", properties: { scope: { const: "record" } }, required: ["scope"] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
    then: { type: "object", properties: { record: nonNegativeInt }, required: ["record"] },
    else: { not: { type: "object", properties: { record: true }, required: ["record"] } },
  } as const;
}

import { nonNegativeInt } from "./common.js";

const namedConfig = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1 },
    configuration: { type: "object" },
    must_understand: { type: "boolean" },
  },
  required: ["name"],
  additionalProperties: false,
} as const;

/** Keys beyond the core ones are extensions, allowed only when they say readers may ignore them. */
const ignorableExtension = {
  type: "object",
  properties: { must_understand: { const: false } },
  required: ["must_understand"],
} as const;

/** Zarr v3 core: an array's zarr.json (shape only; codec configurations are each codec's to check). */
export const zarrArrayJsonSchema = {
  $id: "zarr-stream:zarr-array",
  type: "object",
  properties: {
    zarr_format: { const: 3 },
    node_type: { const: "array" },
    shape: { type: "array", items: nonNegativeInt },
    data_type: { oneOf: [{ type: "string", minLength: 1 }, namedConfig] },
    chunk_grid: namedConfig,
    chunk_key_encoding: namedConfig,
    fill_value: {
      anyOf: [
        { type: "number" },
        { type: "string" },
        { type: "boolean" },
        { type: "null" },
        { type: "array", items: { anyOf: [{ type: "number" }, { type: "string" }] } },
      ],
    },
    codecs: { type: "array", minItems: 1, items: namedConfig },
    attributes: { type: "object" },
    dimension_names: { type: "array", items: { anyOf: [{ type: "string" }, { type: "null" }] } },
    storage_transformers: { type: "array", items: namedConfig },
  },
  required: [
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
  ],
  additionalProperties: ignorableExtension,
} as const;

/** Zarr v3 core: a group's zarr.json. */
export const zarrGroupJsonSchema = {
  $id: "zarr-stream:zarr-group",
  type: "object",
  properties: {
    zarr_format: { const: 3 },
    node_type: { const: "group" },
    attributes: { type: "object" },
  },
  required: ["zarr_format", "node_type"],
  additionalProperties: ignorableExtension,
} as const;

import { attrs, nodeName, nonNegativeInt, profile, shape, streamDType, variableSpec } from "./common.js";

export const streamSchemaJsonSchema = {
  $id: "zarr-stream:stream-schema",
  type: "object",
  properties: {
    dims: {
      type: "array",
      minItems: 1,
      items: { type: "array", prefixItems: [nodeName, nonNegativeInt], minItems: 2, items: false },
    },
    time_dim: nodeName,
    time_mode: {
      oneOf: [
        { const: "append" },
        {
          type: "object",
          properties: {
            indexed: {
              type: "object",
              properties: { times: { type: "array", items: { type: "number" } } },
              required: ["times"],
              additionalProperties: false,
            },
          },
          required: ["indexed"],
          additionalProperties: false,
        },
      ],
    },
    vars: { type: "array", items: variableSpec(streamDType) },
    statics: { type: "array", items: variableSpec(streamDType) },
    chunk_shape: shape,
    shard_shape: shape,
    profile,
    coords: {
      type: "object",
      propertyNames: nodeName,
      additionalProperties: {
        type: "object",
        properties: { values: { type: "array", items: { type: "number" } }, attrs },
        additionalProperties: false,
      },
    },
    attrs,
  },
  required: ["dims", "time_dim", "time_mode", "vars", "statics", "chunk_shape", "shard_shape", "profile"],
  additionalProperties: false,
} as const;

import { blobRef, fingerprint, nodeName, nonNegativeInt, region } from "./common.js";

export const commitTokenJsonSchema = {
  $id: "zarr-stream:commit-token",
  type: "object",
  properties: {
    schema: { const: "earthsciio/commit-token/v1" },
    writer: nonNegativeInt,
    region,
    fingerprint,
    records: {
      type: "array",
      items: {
        type: "object",
        properties: { index: nonNegativeInt, t: { type: "number" } },
        required: ["index", "t"],
        additionalProperties: false,
      },
    },
    statics: { type: "array", items: nodeName },
    blobs: { type: "array", items: blobRef(false) },
    objects: { type: "array", items: { type: "string", minLength: 1 } },
  },
  required: ["schema", "writer", "region", "fingerprint", "records", "statics", "blobs", "objects"],
  additionalProperties: false,
} as const;

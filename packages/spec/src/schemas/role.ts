import { nonNegativeInt, positiveInt, region } from "./common.js";

export const roleJsonSchema = {
  $id: "zarr-stream:role",
  oneOf: [
    {
      type: "object",
      properties: { kind: { const: "single" } },
      required: ["kind"],
      additionalProperties: false,
    },
    {
      type: "object",
      properties: { kind: { const: "owner" }, nWriters: positiveInt },
      required: ["kind", "nWriters"],
      additionalProperties: false,
    },
    {
      type: "object",
      properties: { kind: { const: "contributor" }, id: nonNegativeInt },
      required: ["kind", "id"],
      additionalProperties: false,
    },
  ],
} as const;

export const regionJsonSchema = { $id: "zarr-stream:region", ...region } as const;

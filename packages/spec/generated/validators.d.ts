// The types of generated/validators.js, which packages/spec/scripts/write-validators.mjs writes.
import type { ErrorObject } from "ajv";

/** $id → Ajv's standalone validating function, which leaves its first error on its own `errors`. */
export declare const PRECOMPILED: Readonly<
  Record<string, ((data: unknown) => boolean) & { errors?: ErrorObject[] | null }>
>;

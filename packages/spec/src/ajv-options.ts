import type { Options } from "ajv";

/** Ajv's options, shared by the build's standalone code (validator-code.ts) and a run-time compile. */
export const AJV_OPTIONS: Readonly<Options> = { allErrors: false, strict: true };

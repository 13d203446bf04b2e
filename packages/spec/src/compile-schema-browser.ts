import type { Ajv2020 } from "ajv/dist/2020.js";
import { ZarrStreamError } from "./errors.js";

/**
 * The browser's stand-in for compile-schema.ts: a page has the package's own validators, precompiled
 * at build time, and no Ajv compiler in its bundle (nor Function-constructor code for a strict CSP).
 */
export function runtimeAjv(): Ajv2020 {
  throw new ZarrStreamError(
    "compiling a JSON Schema at run time is not available in the browser build; only the package's own " +
      "(precompiled) validators are",
  );
}

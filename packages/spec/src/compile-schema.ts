import { createRequire } from "node:module";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { AJV_OPTIONS } from "./ajv-options.js";

let shared: Ajv2020 | undefined;

/**
 * Node's Ajv, loaded on the first run-time compile: only a schema the build did not precompile (a
 * caller's own) needs it, so importing the package never loads Ajv's compiler. An ES import cannot be
 * lazy and synchronous at once; require can, and Ajv ships CommonJS. Browsers take
 * compile-schema-browser.ts instead (package.json "imports", "browser" condition).
 */
export function runtimeAjv(): Ajv2020 {
  if (shared === undefined) {
    const { Ajv2020: AjvClass } = createRequire(import.meta.url)(
      "ajv/dist/2020.js",
    ) as typeof import("ajv/dist/2020.js");
    shared = new AjvClass(AJV_OPTIONS);
  }
  return shared;
}

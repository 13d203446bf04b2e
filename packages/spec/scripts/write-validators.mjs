#!/usr/bin/env node
// Writes generated/validators.js (Ajv's standalone validators of every schema the package's
// makeValidator is given, imported as "#precompiled-validators") from the compiled package (run after tsc).
// `--check` writes nothing and exits 1 when the file on disk differs from what the build would write.
import { readFileSync, writeFileSync } from "node:fs";
// Loading the package runs every module-level makeValidator call, which is how the schemas are found.
import "../dist/src/index.js";
import { declaredSchemas } from "../dist/src/validate.js";
import { GENERATED_VALIDATORS, validatorModuleText } from "../dist/src/validator-code.js";

const url = new URL(`../${GENERATED_VALIDATORS}`, import.meta.url);
const text = validatorModuleText(declaredSchemas());
let current;
try {
  current = readFileSync(url, "utf8");
} catch {
  current = undefined;
}
if (current !== text) {
  if (process.argv.includes("--check")) {
    console.error(`stale: packages/spec/${GENERATED_VALIDATORS} (npm run build -w packages/spec)`);
    process.exit(1);
  }
  writeFileSync(url, text);
}

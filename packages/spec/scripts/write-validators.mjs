#!/usr/bin/env node
// Writes generated/validators.js (Ajv's standalone validators of every schema the package's
// makeValidator is given, imported as "#precompiled-validators") and its types, generated/validators.d.ts,
// from the compiled package (run after tsc).
// `--check` writes nothing and exits 1 when a file on disk differs from what the build would write.
import { writeOrCheck } from "./generated-file.mjs";
// Loading the package runs every module-level makeValidator call, which is how the schemas are found.
import "../dist/src/index.js";
import { declaredSchemas } from "../dist/src/validate.js";
import {
  GENERATED_VALIDATOR_TYPES,
  GENERATED_VALIDATORS,
  validatorModuleText,
  validatorTypesText,
} from "../dist/src/validator-code.js";

const schemas = declaredSchemas();
let stale = 0;
for (const [file, text] of [
  [GENERATED_VALIDATORS, validatorModuleText(schemas)],
  [GENERATED_VALIDATOR_TYPES, validatorTypesText(schemas)],
]) {
  if (writeOrCheck(new URL(`../${file}`, import.meta.url), text, process.argv.includes("--check"), file))
    stale++;
}
process.exit(stale === 0 ? 0 : 1);

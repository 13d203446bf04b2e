#!/usr/bin/env node
// Writes packages/spec/schemas/*.schema.json from the compiled TypeScript schemas (run after tsc).
// `--check` writes nothing and exits 1 when a file on disk differs from what the build would write.
import { mkdirSync } from "node:fs";
import { SCHEMA_FILES, schemaFileText } from "../dist/src/schema-files.js";
import { writeOrCheck } from "./generated-file.mjs";

const dir = new URL("../schemas/", import.meta.url);
const check = process.argv.includes("--check");
mkdirSync(dir, { recursive: true });
let stale = 0;
for (const name of Object.keys(SCHEMA_FILES)) {
  if (writeOrCheck(new URL(name, dir), schemaFileText(name), check, `schemas/${name}`)) stale++;
}
process.exit(stale === 0 ? 0 : 1);

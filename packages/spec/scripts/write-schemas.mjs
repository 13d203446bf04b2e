#!/usr/bin/env node
// Writes packages/spec/schemas/*.schema.json from the compiled TypeScript schemas (run after tsc).
// `--check` writes nothing and exits 1 when a file on disk differs from what the build would write.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { SCHEMA_FILES, schemaFileText } from "../dist/src/schema-files.js";

const dir = new URL("../schemas/", import.meta.url);
const check = process.argv.includes("--check");
mkdirSync(dir, { recursive: true });
let stale = 0;
for (const name of Object.keys(SCHEMA_FILES)) {
  const url = new URL(name, dir);
  const text = schemaFileText(name);
  let current;
  try {
    current = readFileSync(url, "utf8");
  } catch {
    current = undefined;
  }
  if (current === text) continue;
  if (check) {
    stale++;
    console.error(`stale: packages/spec/schemas/${name}`);
  } else writeFileSync(url, text);
}
process.exit(stale === 0 ? 0 : 1);

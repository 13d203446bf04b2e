import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { schemaFingerprint, schemaFromManifest, validateOutputManifestV2 } from "../src/index.js";

const pkg = fileURLToPath(new URL("../../", import.meta.url));

function codeBlock(file: string, lang: string): string {
  const text = readFileSync(join(pkg, file), "utf8");
  const match = text.match(new RegExp("```" + lang + "\\n([\\s\\S]*?)```"));
  assert.ok(match, `${file} has a ${lang} block`);
  return match[1]!;
}

test("§8.2 the documented v2 manifest example validates and its fingerprint matches its schema", () => {
  const m = validateOutputManifestV2(JSON.parse(codeBlock("docs/output-manifest-v2.md", "json")));
  assert.equal(schemaFingerprint(schemaFromManifest(m)), m.fingerprint);
});

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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

test("README example runs and prints what its comments say", () => {
  // The example is plain JS apart from its import; point the import at this build.
  const source = codeBlock("README.md", "ts").replace(
    '"@zarr-stream/spec"',
    JSON.stringify(new URL("../src/index.js", import.meta.url).href),
  );
  const file = join(mkdtempSync(join(tmpdir(), "spec-readme-")), "example.mjs");
  writeFileSync(file, source);
  const res = spawnSync(process.execPath, [file], { encoding: "utf8" });
  assert.equal(res.status, 0, res.stderr);
  const lines = res.stdout.trim().split("\n");
  assert.match(lines[0]!, /^sha256:[0-9a-f]{64}$/);
  assert.match(lines[1]!, /^gap gap: no writer covers \{"lat":\[2,4\]\}/);
  assert.match(lines[2]!, /114\.25, 119\.25, 124\.25/);
});

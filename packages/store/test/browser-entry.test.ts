import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isBuiltin } from "node:module";
import { dirname, resolve, sep } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as browser from "@zarr-stream/store/browser";
import { runnable, statedOutput, tsBlocks } from "@zarr-stream/test-support/readme";
import { FsStore } from "../src/fs-store.js";
import { MemoryStore } from "../src/memory-store.js";

/** Module specifiers a compiled ES module names in its import/export-from statements and import() calls. */
function specifiersOf(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\b[^"'`;]*?\bfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) for (const m of source.matchAll(pattern)) found.push(m[1]!);
  return found;
}

/**
 * Every module the entry reaches, following relative imports and the workspace's own packages (how a
 * bundler would), with the bare specifiers of other packages it stops at.
 */
async function importGraph(entry: string): Promise<{ files: string[]; external: string[] }> {
  const files = new Set<string>();
  const external = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of specifiersOf(await readFile(file, "utf8"))) {
      if (spec.startsWith(".")) pending.push(resolve(dirname(file), spec));
      else if (spec.startsWith("@zarr-stream/")) {
        pending.push(fileURLToPath(import.meta.resolve(spec, pathToFileURL(file).href)));
      } else external.add(spec);
    }
  }
  return { files: [...files], external: [...external] };
}

describe("the browser entry", () => {
  it("imports no node: module, directly or through the modules it reaches", async () => {
    const entry = fileURLToPath(import.meta.resolve("@zarr-stream/store/browser"));
    const { files, external } = await importGraph(entry);
    // The walk really follows imports: the key rules and the spec's errors are reached.
    assert.ok(files.some((f) => f.endsWith("keys.js")));
    assert.ok(files.some((f) => f.includes(`${sep}spec${sep}`)));
    assert.deepEqual(
      external.filter((spec) => isBuiltin(spec)),
      [],
      "node built-ins reachable from the browser entry",
    );
    for (const file of files) {
      assert.ok(!/fs-store|s3-store|direct-writes|fs-key-lock|codecs/.test(file), `${file} is reachable`);
    }
  });

  it("the import walk sees node: imports where there are some", async () => {
    const { external } = await importGraph(fileURLToPath(import.meta.resolve("@zarr-stream/store")));
    assert.ok(external.includes("node:fs/promises"));
  });

  it("holds the key rules the backends use, and guards that tell the capabilities apart", async () => {
    assert.equal(browser.keyProblem("a/b"), undefined);
    assert.equal(browser.keyProblem("a/../b"), 'has a ".." segment');
    assert.throws(() => browser.check.range("a", -1, 2), /offset for "a"/);
    const memory = new MemoryStore();
    const readOnly: browser.ReadableStore = {
      url: "test://read-only",
      get: (k) => memory.get(k),
      getRange: (k, o, n) => memory.getRange(k, o, n),
      getSuffix: (k, n) => memory.getSuffix(k, n),
      size: (k) => memory.size(k),
    };
    assert.deepEqual(
      [browser.canWrite(readOnly), browser.canList(readOnly), browser.canFence(readOnly)],
      [false, false, false],
    );
    for (const store of [memory, new FsStore("/nonexistent/zs-browser-entry")]) {
      assert.deepEqual(
        [browser.canWrite(store), browser.canList(store), browser.canFence(store)],
        [true, true, true],
      );
      assert.equal(store.readCost, "cheap");
    }
  });

  it("README: the browser-entry example runs and prints what it says", () => {
    const readme = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");
    const code = tsBlocks(readme).find((c) => c.includes("@zarr-stream/store/browser"));
    assert.ok(code !== undefined, "README has a browser-entry example");
    const expected = statedOutput(code).map((line) => line.replace(/ \(.*\)$/, ""));
    const out = execFileSync(process.execPath, ["--input-type=module", "--eval", runnable(code)], {
      cwd: fileURLToPath(new URL("../../", import.meta.url)),
      encoding: "utf8",
    });
    assert.deepEqual(out.trimEnd().split("\n"), expected);
  });
});

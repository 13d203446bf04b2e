import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { BUNDLE_DIR, type BundleMeta, buildViewerBundle, isBundleChunk } from "../src/bundle.js";

const packages = fileURLToPath(new URL("../../../", import.meta.url)); // packages/

type Exports = string | { [condition: string]: Exports };

/** What a bundler for browsers resolves an exports entry to: the first of its conditions that applies. */
function browserTarget(e: Exports): string | undefined {
  if (typeof e === "string") return e;
  for (const [condition, target] of Object.entries(e)) {
    if (condition !== "browser" && condition !== "import" && condition !== "default") continue;
    const t = browserTarget(target);
    if (t !== undefined) return t;
  }
  return undefined;
}

/** The package a metafile path (relative to packages/viewer) belongs to: "viewer" or a sibling's folder. */
function packageOf(input: string): string {
  const sibling = /^\.\.\/([^/]+)\//.exec(input);
  return sibling ? sibling[1]! : "viewer";
}

test("bundle: other packages are entered only through their exports, with the browser condition", async () => {
  await buildViewerBundle(true);
  const meta = JSON.parse(readFileSync(join(BUNDLE_DIR, "meta.json"), "utf8")) as BundleMeta;
  const entered = new Map<string, string>();
  for (const [from, { imports }] of Object.entries(meta.inputs)) {
    assert.doesNotMatch(from, /:/, `${from} comes from a plugin namespace, not a file`);
    for (const imp of imports) {
      if (imp.external) {
        assert.match(imp.original ?? imp.path, /^numcodecs\//, `${from} imports ${imp.path}, left external`);
        continue;
      }
      const pkg = packageOf(imp.path);
      if (pkg === packageOf(from) || imp.path.includes("node_modules/")) continue;
      const json = JSON.parse(readFileSync(join(packages, pkg, "package.json"), "utf8")) as {
        name: string;
        exports: Record<string, Exports>;
      };
      const subpath = imp.original?.slice(json.name.length) ?? "";
      assert.ok(imp.original?.startsWith(json.name), `${from} imports ${imp.path} by ${imp.original}`);
      const target = browserTarget(json.exports[`.${subpath}`] ?? {});
      assert.equal(imp.path, join("..", pkg, target ?? "(not exported)"), `${from} imports ${imp.original}`);
      entered.set(imp.original ?? "", imp.path);
    }
  }
  // The page decodes with the codecs' browser entry: our SIMD wasm, no addon loader, no worker pool.
  assert.equal(entered.get("@zarr-stream/codecs"), "../codecs/dist/src/browser.js");
  const files = Object.keys(meta.inputs);
  assert.ok(files.includes("../codecs/dist/src/browser-wasm-backend.js"), files.join("\n"));
  for (const nodeOnly of ["native-backend", "simd-wasm-backend", "wasm-worker"])
    assert.ok(!files.includes(`../codecs/dist/src/${nodeOnly}.js`), `${nodeOnly} is in the bundle`);
  const bundle = readFileSync(join(BUNDLE_DIR, "viewer.js"), "utf8");
  assert.doesNotMatch(bundle, /from\s*["']node:|import\(["']node:/, "the bundle imports a node: module");
});

/**
 * The validators the page's code reaches: the reader validates manifests (v1, v2 and the paged v2), their
 * pages and the arrays' zarr.json, and nothing else. A new one the page really uses goes here.
 */
const PAGE_SCHEMAS = [
  "zarr-stream:manifest-page-record-pages",
  "zarr-stream:manifest-page-records",
  "zarr-stream:manifest-page-time-shards",
  "zarr-stream:output-manifest-v1",
  "zarr-stream:output-manifest-v2",
  "zarr-stream:output-manifest-v2-paged",
  "zarr-stream:zarr-array",
];

test("bundle: it carries the validators the page reaches and no other (schemas and precompiled code)", async () => {
  await buildViewerBundle(true);
  const bundle = readFileSync(join(BUNDLE_DIR, "viewer.js"), "utf8");
  const ids = [...new Set(bundle.match(/zarr-stream:[a-z0-9-]+/g) ?? [])].sort();
  for (const unused of [
    "zarr-stream:write-conformance-spec-v2",
    "zarr-stream:write-v2-dump-v1",
    "zarr-stream:journal-row",
  ])
    assert.ok(!ids.includes(unused), `${unused} is in the bundle, which the page never validates`);
  assert.deepEqual(ids, PAGE_SCHEMAS, "the schema $ids in the bundle are the page's");
  // The generated module holds each schema as Ajv's JSON text, quoted keys and all, beside its function.
  for (const id of PAGE_SCHEMAS)
    assert.ok(bundle.includes(`"$id":"${id}"`), `the precompiled validator of ${id} is not in the bundle`);
});

test("bundle: what the page imports only dynamically (hash-wasm, behind the numcodecs backend) is a chunk of its own, not in viewer.js", async () => {
  await buildViewerBundle(true);
  const meta = JSON.parse(readFileSync(join(BUNDLE_DIR, "meta.json"), "utf8")) as BundleMeta;
  const outputs = Object.entries(meta.outputs ?? {}).filter(([f]) => f.endsWith(".js"));
  const holding = (pkg: string) =>
    outputs
      .filter(([, o]) => Object.keys(o.inputs).some((i) => i.includes(`node_modules/${pkg}/`)))
      .map(([f]) => f);
  const [viewer] = outputs.find(([f]) => f.endsWith("/viewer.js")) ?? [];
  assert.ok(viewer, outputs.map(([f]) => f).join());
  const hashWasm = holding("hash-wasm");
  assert.equal(hashWasm.length, 1, `hash-wasm is in ${hashWasm.join(", ")}`);
  assert.ok(!hashWasm.includes(viewer!), "hash-wasm is in viewer.js");
  const chunk = hashWasm[0]!.split("/").at(-1)!;
  assert.ok(isBundleChunk(chunk), chunk);
  assert.ok(readFileSync(join(BUNDLE_DIR, "viewer.js"), "utf8").includes(`import("./${chunk}")`));
  // A later build removes chunks no viewer.js names.
  writeFileSync(join(BUNDLE_DIR, "chunk-ZZZZZZZZ.js"), "");
  await buildViewerBundle(true);
  assert.ok(!existsSync(join(BUNDLE_DIR, "chunk-ZZZZZZZZ.js")), "a stale chunk survived a build");
});

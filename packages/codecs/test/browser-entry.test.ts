import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { CorruptShard, ZarrStreamError } from "@zarr-stream/spec";
import { smoothBytes } from "./helpers.js";

/*
 * The "browser" entry, run in Node as a page would run it: no addon, no worker threads, the wasm module
 * fetched by URL. fetch here serves file: URLs (a page's fetch serves http:), and counts what it fetched.
 */

const pkg = fileURLToPath(new URL("../..", import.meta.url)); // packages/codecs
const fetched: string[] = [];
globalThis.fetch = (async (url: URL | string) => {
  fetched.push(String(url));
  return new Response(readFileSync(fileURLToPath(url)));
}) as typeof fetch;
const codecs = await import("../src/browser.js");

/** Every module the browser entry loads, by following its relative imports; bare specifiers beside. */
function moduleGraph(entry: string): { files: string[]; bare: Set<string> } {
  const files = [entry];
  const bare = new Set<string>();
  for (let i = 0; i < files.length; i++) {
    const text = readFileSync(files[i]!, "utf8");
    for (const m of text.matchAll(/(?:from\s*|import\s*\(\s*|import\s+)["']([^"']+)["']/g)) {
      const spec = m[1]!;
      if (!spec.startsWith(".")) bare.add(spec);
      else {
        const file = join(dirname(files[i]!), spec);
        if (!files.includes(file)) files.push(file);
      }
    }
  }
  return { files, bare };
}

test("browser entry: the package maps its browser condition to it, and it loads nothing of Node's", () => {
  const json = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
  assert.equal(json.exports["."].browser.default, "./dist/src/browser.js");
  assert.ok(existsSync(join(pkg, json.exports["./zstream_codecs.wasm"])), "the wasm module is exported");
  const { files, bare } = moduleGraph(join(pkg, "dist", "src", "browser.js"));
  assert.deepEqual(
    [...bare].filter((s) => !/^(@zarr-stream\/spec|numcodecs\/(blosc|zstd)|hash-wasm)$/.test(s)),
    [],
    "only the spec package, numcodecs and hash-wasm are imported by name",
  );
  for (const f of files) {
    const text = readFileSync(f, "utf8");
    assert.doesNotMatch(text, /\bprocess\.|createRequire|worker_threads/, `${f} uses Node`);
  }
  const names = files.map((f) => f.slice(f.lastIndexOf("/") + 1));
  for (const nodeOnly of ["index.js", "native-backend.js", "simd-wasm-backend.js", "wasm-worker.js"])
    assert.ok(!names.includes(nodeOnly), `${nodeOnly} is reached from the browser entry`);
});

test("browser entry: our SIMD wasm round-trips both profiles and checks frames, fetched once", async () => {
  assert.equal(codecs.codecBackend(), "wasm");
  const data = smoothBytes(200_000);
  for (const profile of ["diagnostic", "wasm"] as const) {
    const spec = codecs.profileCodec(profile, "float64");
    const frame = await codecs.encode(spec, data);
    assert.ok(frame.length < data.length, `${profile} compresses`);
    assert.deepEqual(await codecs.decode(spec, frame, data.length, "t/c/0"), data);
    const truncated = frame.subarray(0, frame.length - 1);
    await assert.rejects(codecs.decode(spec, truncated, data.length, "t/c/0"), (e: unknown) => {
      assert.ok(e instanceof CorruptShard, String(e));
      assert.equal(e.key, "t/c/0");
      return true;
    });
  }
  // A wrong content checksum passes the frame checks in TypeScript; only the wasm decoder sees it.
  const checked = { kind: "zstd", level: 3, checksum: true } as const;
  const frame = await codecs.encode(checked, data);
  frame[frame.length - 1]! ^= 0xff;
  await assert.rejects(codecs.decode(checked, frame, data.length, "t/c/1"), (e: unknown) => {
    assert.ok(e instanceof CorruptShard && e.key === "t/c/1", String(e));
    return true;
  });
  assert.equal((await codecs.crc32c(new TextEncoder().encode("123456789"))).toString(16), "e3069283");
  assert.equal(fetched.length, 1, fetched.join(", "));
  assert.match(fetched[0]!, /\/wasm\/zstream_codecs\.wasm$/);
});

test("browser entry: decodeBoxes scatters chunks into a target as on Node", async () => {
  const spec = codecs.profileCodec("diagnostic", "uint8");
  const chunks = [new Uint8Array(16).fill(1), new Uint8Array(16).fill(2)];
  const frames = await Promise.all(chunks.map((c) => codecs.encode(spec, c)));
  const target = new Uint8Array(32);
  // Two 4x4 chunks side by side in a 4x8 target: src start, dst start, count per frame.
  const boxes = Int32Array.of(0, 0, 0, 0, 4, 4, 0, 0, 0, 4, 4, 4);
  await codecs.decodeBoxes(spec, frames, Int32Array.of(4, 4), 1, target, Int32Array.of(4, 8), boxes);
  assert.deepEqual([...target.subarray(0, 8)], [1, 1, 1, 1, 2, 2, 2, 2]);
  assert.deepEqual([...target.subarray(24)], [1, 1, 1, 1, 2, 2, 2, 2]);
});

test("browser entry: there is no native backend to choose", () => {
  assert.throws(() => codecs.setCodecBackend("native"), ZarrStreamError);
  codecs.setCodecBackend("numcodecs");
  assert.equal(codecs.codecBackend(), "numcodecs");
  codecs.setCodecBackend("wasm");
  assert.equal(codecs.codecBackend(), "wasm");
});

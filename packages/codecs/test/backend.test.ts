import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { codecBackend, setCodecBackend } from "@zarr-stream/codecs";
import { ZarrStreamError } from "@zarr-stream/spec";

const pkg = fileURLToPath(new URL("../..", import.meta.url)); // packages/codecs
const root = join(pkg, "..", "..");

/**
 * Copies of the compiled package with no build/ directory: what an install that ran no scripts leaves
 * (the shipped wasm/ module included), and one without the wasm module either.
 */
function copyOfPackage(withWasm: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), "zs-codecs-"));
  cpSync(join(pkg, "dist", "src"), join(dir, "dist", "src"), { recursive: true });
  cpSync(join(pkg, "package.json"), join(dir, "package.json"));
  if (withWasm) cpSync(join(pkg, "wasm"), join(dir, "wasm"), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
const bare = copyOfPackage(true);
const bareNoWasm = copyOfPackage(false);

function run(dir: string, env: Record<string, string | undefined>) {
  const script = `
    const c = await import(${JSON.stringify(join(dir, "dist", "src", "index.js"))});
    try { c.codecBackend(); c.codecBackend(); } catch (e) { console.log("threw " + e.name + ": " + e.message); process.exit(0); }
    const spec = c.profileCodec("diagnostic", "float64");
    const data = new Uint8Array(1000).map((_, i) => i % 17);
    const back = await c.decode(spec, await c.encode(spec, data), 1000);
    console.log(c.codecBackend(), back.every((v, i) => v === data[i]));`;
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, ZSTREAM_CODECS: undefined, ...env },
  });
  assert.equal(res.status, 0, res.stderr);
  return { out: res.stdout.trim(), err: res.stderr.trim() };
}

test("backend: native is the default when the addon loads, silently", () => {
  const r = run(pkg, {});
  assert.equal(r.out, "native true");
  assert.equal(r.err, "");
});

test("backend: without the addon our SIMD wasm is used, announced once with the reason and the fix", () => {
  const r = run(bare, {});
  assert.equal(r.out, "wasm true");
  assert.equal(r.err.split("\n").length, 1, r.err);
  assert.match(r.err, /native addon unavailable \(.+\); using the SIMD wasm backend/);
  assert.match(r.err, /npm install-scripts approve @zarr-stream\/codecs && npm rebuild @zarr-stream\/codecs/);
});

test("backend: without the addon and the wasm module, numcodecs' wasm is used, announced once", () => {
  const r = run(bareNoWasm, {});
  assert.equal(r.out, "numcodecs true");
  assert.equal(r.err.split("\n").length, 1, r.err);
  assert.match(r.err, /SIMD wasm unavailable \(.+\); using numcodecs' wasm/);
});

test("backend: ZSTREAM_CODECS=wasm forces wasm with no notice; =native forces native", () => {
  assert.deepEqual(run(bare, { ZSTREAM_CODECS: "wasm" }), { out: "wasm true", err: "" });
  assert.deepEqual(run(pkg, { ZSTREAM_CODECS: "wasm" }), { out: "wasm true", err: "" });
  assert.deepEqual(run(pkg, { ZSTREAM_CODECS: "native" }), { out: "native true", err: "" });
  assert.deepEqual(run(pkg, { ZSTREAM_CODECS: "numcodecs" }), { out: "numcodecs true", err: "" });
});

test("backend: ZSTREAM_CODECS=native without the addon, or an unknown value, is a clear error", () => {
  assert.match(
    run(bare, { ZSTREAM_CODECS: "native" }).out,
    /^threw ZarrStreamError: the native codecs addon is not available/,
  );
  assert.match(
    run(pkg, { ZSTREAM_CODECS: "gpu" }).out,
    /^threw ZarrStreamError: ZSTREAM_CODECS must be "native", "wasm" or "numcodecs", got "gpu"/,
  );
});

test("backend: setCodecBackend switches, and refuses an unknown name", () => {
  setCodecBackend("wasm");
  assert.equal(codecBackend(), "wasm");
  setCodecBackend("numcodecs");
  assert.equal(codecBackend(), "numcodecs");
  setCodecBackend("native");
  assert.equal(codecBackend(), "native");
  assert.throws(() => setCodecBackend("gpu" as "native"), ZarrStreamError);
});

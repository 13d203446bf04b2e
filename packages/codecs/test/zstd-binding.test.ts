import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { loadAddon } from "../src/native-backend.js";

// The install compiles zstd 1.5.7 into the addon (scripts/build-native.mjs) because Debian's 1.5.4 halves
// Blosc-zstd throughput. Blosc itself is the system library, so the speed-up exists only if libblosc's
// ZSTD_* calls bind to the addon's copy rather than to the system libzstd it was linked against.

test("zstd: the addon carries zstd 1.5.7, compiled in", () => {
  const loaded = loadAddon();
  assert.ok("addon" in loaded, `native addon not built: ${"error" in loaded ? loaded.error : ""}`);
  const info = loaded.addon.info();
  assert.equal(info.zstd, "1.5.7");
  assert.equal(info.zstdCompiledIn, true);
});

test("zstd: the system libblosc binds its ZSTD_* calls to the addon's zstd, not the system libzstd", () => {
  const script = `
    const c = await import("@zarr-stream/codecs");
    const spec = c.profileCodec("diagnostic", "float64");
    const data = new Uint8Array(Float64Array.from({ length: 20000 }, (_, i) => Math.sin(i / 40)).buffer);
    await c.decode(spec, await c.encode(spec, data), data.length);
    console.log(c.codecBackend());`;
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    encoding: "utf8",
    env: { ...process.env, ZSTREAM_CODECS: "native", LD_DEBUG: "bindings" },
    maxBuffer: 256 << 20,
  });
  assert.equal(res.status, 0, res.stderr.slice(-2000));
  assert.equal(res.stdout.trim(), "native");
  // ld.so prints: binding file <user> [0] to <provider> [0]: normal symbol `ZSTD_compress'
  const bindings = res.stderr
    .split("\n")
    .map((l) => /binding file (\S*libblosc\S*) .* to (\S+) .*symbol `(ZSTD_\w+)'/.exec(l))
    .filter((m) => m !== null);
  const used = new Set(bindings.map((m) => m[3]));
  assert.ok(
    used.has("ZSTD_compress") || used.has("ZSTD_compressCCtx"),
    `blosc compressed without zstd? ${[...used]}`,
  );
  assert.ok(
    used.has("ZSTD_decompress") || used.has("ZSTD_decompressDCtx"),
    `no zstd decompression: ${[...used]}`,
  );
  for (const m of bindings)
    assert.match(m[2]!, /zstream_codecs\.node$/, `${m[3]} of libblosc bound to ${m[2]}`);
});

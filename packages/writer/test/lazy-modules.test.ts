import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";

/**
 * Modules a local writer never needs, each loaded on first use by the code that needs it: Ajv's
 * compiler (the package's validators are precompiled), the SigV4 signer (S3 GETs), the AWS SDK (S3Store)
 * and hash-wasm (the numcodecs backend's checksums). All are CommonJS, so whatever loads one, an ES
 * import or require, leaves its file in the CommonJS cache, which the child prints.
 */
const LAZY = {
  ajvCompiler: "/ajv/dist/core.js",
  sigV4: "/@smithy/signature-v4/",
  awsSdk: "/@aws-sdk/client-s3/",
  hashWasm: "/hash-wasm/",
};

function childScript(afterWrite: string): string {
  return `
    import { createRequire } from "node:module";
    import { mkdtempSync, rmSync } from "node:fs";
    import { tmpdir } from "node:os";
    import { join } from "node:path";
    const { FsStore } = await import("@zarr-stream/store");
    const { ZarrStreamWriter } = await import("@zarr-stream/writer");
    const dir = mkdtempSync(join(tmpdir(), "zs-lazy-"));
    try {
      const schema = {
        dims: [["time", 0], ["lat", 4], ["lon", 8]],
        time_dim: "time",
        time_mode: "append",
        vars: [{ name: "v", dims: ["time", "lat", "lon"], dtype: "float32" }],
        statics: [],
        chunk_shape: { time: 1, lat: 2, lon: 4 },
        shard_shape: { time: 2, lat: 4, lon: 8 },
        profile: "diagnostic",
      };
      const w = await ZarrStreamWriter.create(new FsStore(dir), schema, { kind: "single" });
      for (let r = 0; r < 2; r++) await w.writeRecord(r, { v: new Float32Array(32).fill(r) });
      await w.flush();
      await w.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    ${afterWrite}
    const files = Object.keys(createRequire(import.meta.url).cache);
    const lazy = ${JSON.stringify(LAZY)};
    console.log(JSON.stringify(Object.fromEntries(
      Object.entries(lazy).map(([name, part]) => [name, files.some((f) => f.includes(part))]),
    )));
  `;
}

function run(afterWrite: string): Record<keyof typeof LAZY, boolean> {
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", childScript(afterWrite)], {
    encoding: "utf8",
    cwd: new URL("../../", import.meta.url),
    env: { ...process.env, ZSTREAM_CODECS: "native" },
  });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

test("a local writer (native codecs) loads neither Ajv's compiler, the S3 modules nor hash-wasm", () => {
  assert.deepEqual(run(""), { ajvCompiler: false, sigV4: false, awsSdk: false, hashWasm: false });
});

test("each of those modules shows in the child's CommonJS cache once something loads it", () => {
  const loadAll = `
    await import("ajv/dist/2020.js");
    await import("@smithy/signature-v4");
    await import("@aws-sdk/client-s3");
    await import("hash-wasm");
  `;
  assert.deepEqual(run(loadAll), { ajvCompiler: true, sigV4: true, awsSdk: true, hashWasm: true });
});

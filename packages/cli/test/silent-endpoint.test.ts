import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, it } from "node:test";
import { startSilentServer } from "@zarr-stream/test-support/s3-server";
import { BIN } from "./helpers.js";

describe("zstream on an S3 endpoint that accepts TCP and never answers (child process)", () => {
  it("inspect s3://bucket/prefix: exits 3 with StoreTimeout naming the endpoint within ZSTREAM_S3_TIMEOUT_MS", async (t) => {
    const silent = await startSilentServer();
    try {
      const started = performance.now();
      // spawn, not spawnSync: this process serves the silent endpoint while the child waits on it.
      const child = spawn(process.execPath, [BIN, "inspect", "s3://silent-bucket/run"], {
        env: {
          ...process.env,
          FORCE_COLOR: "0",
          AWS_ENDPOINT_URL_S3: silent.endpoint,
          AWS_ACCESS_KEY_ID: "zs-test",
          AWS_SECRET_ACCESS_KEY: "zs-test",
          AWS_REGION: "us-east-1",
          ZSTREAM_S3_TIMEOUT_MS: "1500",
        },
      });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString("utf8");
      });
      const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
      const ms = performance.now() - started;
      t.diagnostic(`zstream inspect exited ${status} after ${ms.toFixed(0)} ms (ZSTREAM_S3_TIMEOUT_MS 1500)`);
      assert.equal(status, 3, stderr); // EXIT.error: a named zarr-stream error
      assert.match(stderr, /StoreTimeout/);
      assert.ok(stderr.includes(silent.endpoint), stderr);
      assert.match(stderr, /AWS_ENDPOINT_URL_S3/);
      assert.match(stderr, /ZSTREAM_S3_TIMEOUT_MS sets the bound/);
      // Node's start and the SDK's import take a second or two on a loaded machine.
      assert.ok(ms >= 1500 && ms < 10_000, `${ms} ms`);
      assert.ok(silent.connections >= 1, "the child reached the silent server");
    } finally {
      await silent.close();
    }
  });
});

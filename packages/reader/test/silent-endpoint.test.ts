import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { StoreTimeout } from "@zarr-stream/spec";
import { S3Store } from "@zarr-stream/store";
import { type SilentServer, startSilentServer, TEST_CREDENTIALS } from "@zarr-stream/test-support/s3-server";
import { readOutputManifest, readRecord } from "../src/index.js";

const DEADLINE_MS = 1500;

describe("reader on an S3 endpoint that accepts TCP and never answers", () => {
  let silent: SilentServer;
  let store: S3Store;
  before(async () => {
    silent = await startSilentServer();
    store = new S3Store({
      bucket: "silent-bucket",
      prefix: "out",
      endpoint: silent.endpoint,
      credentials: TEST_CREDENTIALS,
      deadlineMs: DEADLINE_MS,
    });
  });
  after(async () => {
    await store.close();
    await silent.close();
  });

  for (const [name, call] of [
    ["readOutputManifest", () => readOutputManifest(store)],
    ["readRecord", () => readRecord(store, "h", 0)],
  ] as const) {
    it(`${name}: StoreTimeout naming the endpoint and the store within one deadline`, async (t) => {
      const started = performance.now();
      await assert.rejects(call(), (e: unknown) => {
        assert.ok(e instanceof StoreTimeout, String(e));
        assert.equal(e.endpoint, silent.endpoint);
        assert.match(
          e.message,
          /in s3:\/\/silent-bucket\/out: the endpoint http:\/\/127\.0\.0\.1:\d+ got no answer/,
        );
        assert.match(e.message, /AWS_ENDPOINT_URL_S3/);
        return true;
      });
      const ms = performance.now() - started;
      t.diagnostic(`${name} failed after ${ms.toFixed(0)} ms (deadlineMs ${DEADLINE_MS})`);
      assert.ok(ms >= DEADLINE_MS - 100 && ms < DEADLINE_MS + 2500, `${ms} ms`);
    });
  }
});

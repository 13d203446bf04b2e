import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ProtocolError, StoreTimeout } from "@zarr-stream/spec";
import { S3Store } from "@zarr-stream/store";
import {
  type SilentServer,
  startSilentServer,
  TEST_CREDENTIALS,
  timedFailure,
} from "@zarr-stream/test-support/s3-server";
import { StreamRun, ZarrStreamWriter } from "../src/index.js";
import { gridSchema, newStore } from "./helpers.js";

const DEADLINE_MS = 1500;

describe("writer on an S3 endpoint that accepts TCP and never answers", () => {
  let silent: SilentServer;
  const stores: S3Store[] = [];
  const store = () => {
    const s = new S3Store({
      bucket: "silent-bucket",
      prefix: `run-${stores.length}`,
      endpoint: silent.endpoint,
      credentials: TEST_CREDENTIALS,
      deadlineMs: DEADLINE_MS,
    });
    stores.push(s);
    return s;
  };
  before(async () => {
    silent = await startSilentServer();
  });
  after(async () => {
    for (const s of stores) await s.close();
    await silent.close();
  });

  it("StreamRun.open: StoreTimeout naming the store, the endpoint and what to check, within one deadline", async (t) => {
    const s = store();
    const { err, ms } = await timedFailure(() =>
      StreamRun.open({ store: s, id: 0, count: 2, schema: gridSchema(), env: {}, timeoutMs: 60_000 }),
    );
    t.diagnostic(`StreamRun.open failed after ${ms.toFixed(0)} ms (deadlineMs ${DEADLINE_MS})`);
    assert.ok(err instanceof StoreTimeout, String(err));
    assert.equal(err.endpoint, silent.endpoint);
    assert.match(
      err.message,
      /cannot reach the store s3:\/\/silent-bucket\/run-0 \(writer 0 of 2, at open\)/,
    );
    assert.match(err.message, /AWS_ENDPOINT_URL_S3/);
    assert.ok(err.message.includes(silent.endpoint), err.message);
    assert.ok(ms >= DEADLINE_MS - 100 && ms < DEADLINE_MS + 2500, `${ms} ms`);
  });

  it("StreamRun.open: the run's timeoutMs bounds the first look even when the store's own deadline is longer", async () => {
    const s = new S3Store({
      bucket: "silent-bucket",
      prefix: "run-long",
      endpoint: silent.endpoint,
      credentials: TEST_CREDENTIALS,
      deadlineMs: 60_000,
    });
    stores.push(s);
    const { err, ms } = await timedFailure(() =>
      StreamRun.open({ store: s, id: 1, count: 2, env: {}, timeoutMs: 800, pollMs: 50 }),
    );
    assert.ok(err instanceof StoreTimeout, String(err));
    assert.match(err.message, /writer 1 of 2, at open.*did not answer within 800 ms \(timeoutMs\)/);
    assert.ok(ms < 3000, `${ms} ms`);
  });

  it("ZarrStreamWriter.create: StoreTimeout within one deadline", async (t) => {
    const { err, ms } = await timedFailure(() =>
      ZarrStreamWriter.create(store(), gridSchema(), { kind: "single" }),
    );
    t.diagnostic(`ZarrStreamWriter.create failed after ${ms.toFixed(0)} ms (deadlineMs ${DEADLINE_MS})`);
    assert.ok(err instanceof StoreTimeout, String(err));
    assert.ok(err.message.includes(silent.endpoint), err.message);
    assert.ok(ms < DEADLINE_MS + 2500, `${ms} ms`);
  });
});

describe("run waits end within timeoutMs and say who holds what", () => {
  it("a contributor waiting for the owner names itself, writer 0 and the store URL", async () => {
    const store = newStore();
    const started = performance.now();
    await assert.rejects(
      StreamRun.open({ store, id: 3, count: 4, env: {}, timeoutMs: 300, pollMs: 20 }),
      (e: unknown) => {
        assert.ok(e instanceof ProtocolError, String(e));
        assert.match(
          e.message,
          new RegExp(`^${store.url}: writer 3 of 4 \\(id from explicit\\) waited for writer 0`),
        );
        assert.match(e.message, /start writer 0 with the schema/);
        assert.match(e.message, /\(waited \d+ ms\)$/);
        return true;
      },
    );
    assert.ok(performance.now() - started < 2000);
  });
});

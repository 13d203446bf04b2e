import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { S3Store } from "@zarr-stream/store";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { ClaimConflict, ControlPlane, SnapshotRebuildRefused } from "../src/index.js";
import { segmentKey } from "../src/layout.js";
import { manualClock } from "./helpers/stores.js";

const skip = s3ServerSkipReason("moto");

// The control plane on a real S3 server (moto on loopback): create-only documents and claims are
// conditional PUTs (If-None-Match: *), everything else whole-object PUTs.
describe("the .firecube control plane on S3Store", { skip }, () => {
  let s3: S3Server<S3Store>;
  before(async () => {
    s3 = await startS3Server("moto", (o) => new S3Store(o));
    await s3.makeBucket();
  });
  after(async () => s3?.stop());

  test("WAL layout, claims, snapshot rebuild and read equal a full replay", async () => {
    const store = s3.store();
    const clock = manualClock();
    const open = (ownerId: string) =>
      ControlPlane.open(store, {
        product: "demo",
        now: clock,
        ownerId,
        runHeartbeatIntervalS: 0,
        claimHeartbeatIntervalS: 0,
      });
    const a = await open("a");
    const b = await open("b");

    const runId = await a.startRun({ runId: "r1" });
    await a.acquireClaim("zarr_append:data");
    await assert.rejects(
      b.acquireClaim("zarr_append:data"),
      (e: unknown) => e instanceof ClaimConflict && e.owner === "a",
    );
    for (let i = 0; i < 30; i++)
      await a.appendRecord(runId, { key: `span_${i}`, status: "active", type: "span" });
    await a.completeRun(runId);
    const segs = (await store.list(".firecube/runs/r1/")).filter((k) => k.includes("events-"));
    assert.deepEqual(
      segs,
      [0, 1, 2].map((p) => segmentKey("r1", p)),
    );

    await assert.rejects(a.rebuildSnapshot(), SnapshotRebuildRefused); // a claim is held
    await a.releaseClaim("zarr_append:data");
    clock.advance(1);
    const rebuilt = await a.rebuildSnapshot();
    // 30 spans plus the run's own record (run_r1)
    assert.ok(rebuilt.rebuilt && rebuilt.records === 31, JSON.stringify(rebuilt));
    const read = await b.project();
    assert.equal(read.source, "snapshot");
    assert.deepEqual([...read.state.keys()].sort(), [...(await b.replay()).keys()].sort());
    await a.close();
    await b.close();
  });
});

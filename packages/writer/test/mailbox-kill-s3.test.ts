import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MANIFEST_KEY, readOutputManifest } from "@zarr-stream/reader";
import { allExit, committedValues, dataObjects, differences, launch, mpS3Fixture } from "./mp-s3-fixture.js";
import { MP_WRITERS } from "./mp-workload.js";

const fx = mpS3Fixture("mp-kill-s3");

describe("a contributor of an 8-process S3 run killed with SIGKILL", { skip: fx.skip }, () => {
  it("mailbox: a contributor killed with SIGKILL is named by the owner's timeout, resumes from S3, and the run ends equal", async () => {
    const url = `s3://${fx.bucket}/killed`;
    const s3 = fx.server.store({ prefix: "killed" });
    const owner = launch(fx, url, 0, "create", { ZS_COLLECT_TIMEOUT_MS: "1500" });
    await owner.waitFor(/^ready 0$/);
    const children = [owner];
    for (let id = 1; id < MP_WRITERS; id++) {
      children.push(launch(fx, url, id, "join", id === 3 ? { ZS_PAUSE_AFTER: "17" } : {}));
    }
    // Record 17 is mid-round 4 (records 15-19); record 15 completed time shard 3 and was PUT uncommitted.
    await children[3]!.waitFor(/^paused 17$/);
    children[3]!.proc.kill("SIGKILL");
    assert.equal((await children[3]!.exited).signal, "SIGKILL");

    await owner.waitFor(/^timeout 4 3$/);
    const manifest = await s3.get(MANIFEST_KEY);
    const m = (await readOutputManifest(s3)) as { commit_seq: number; n_records: number };
    assert.deepEqual([m.commit_seq, m.n_records], [3, 15], "the committed state is the last commit");
    await owner.waitFor(/^timeout 4 3$/, 2);
    assert.deepEqual(await s3.get(MANIFEST_KEY), manifest, "nothing is committed while a writer is missing");

    const resumed = launch(fx, url, 3, "resume");
    await resumed.waitFor(/^ready 3$/);
    children[3] = resumed;
    await allExit(children);
    assert.ok(owner.lines.includes("committed 10 50"), owner.lines.join("\n"));
    assert.deepEqual(await s3.list("_tokens/"), []);
    assert.ok((await committedValues(s3)) === (await committedValues(fx.reference)), "read back through S3");
    assert.deepEqual(
      differences(await dataObjects(s3), await dataObjects(fx.reference)),
      [],
      "shards and zarr.json",
    );
  });
});

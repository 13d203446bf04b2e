import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MANIFEST_KEY, readOutputManifest } from "@zarr-stream/reader";
import { S3_SERVER_KINDS } from "@zarr-stream/test-support/s3-server";
import { allExit, committedValues, dataObjects, differences, launch, mpS3Fixture } from "./mp-s3-fixture.js";
import { MP_WRITERS } from "./mp-workload.js";

for (const kind of S3_SERVER_KINDS) {
  describe(`a contributor of an 8-process S3 run (${kind}) killed with SIGKILL`, () => {
    const fx = mpS3Fixture(`mp-kill-s3-${kind}`, kind);
    it(
      `mailbox: a contributor killed with SIGKILL on ${kind} is named in the owner's waits, resumes from S3, and the run ends equal`,
      { skip: fx.skip },
      async () => {
        const url = `s3://${fx.bucket}/killed`;
        const s3 = fx.server.store({ prefix: "killed" });
        const env = { ZS_REPORT_MS: "1500", ZS_PAUSE_AFTER: "3:17" };
        const children = Array.from({ length: MP_WRITERS }, (_, id) => launch(fx, url, id, env));
        const owner = children[0]!;
        // Record 17 is mid-round 4 (records 15-19); record 15 completed time shard 3 and was PUT uncommitted.
        await children[3]!.waitFor(/^paused 3 17 /);
        children[3]!.proc.kill("SIGKILL");
        assert.equal((await children[3]!.exited).signal, "SIGKILL");

        await owner.waitFor(/^waiting 4 3$/);
        const manifest = await s3.get(MANIFEST_KEY);
        const m = (await readOutputManifest(s3)) as { commit_seq: number; n_records: number };
        assert.deepEqual([m.commit_seq, m.n_records], [3, 15], "the committed state is the last commit");
        await owner.waitFor(/^waiting 4 3$/, 2);
        assert.deepEqual(
          await s3.get(MANIFEST_KEY),
          manifest,
          "nothing is committed while a writer is missing",
        );

        const resumed = launch(fx, url, 3);
        await resumed.waitFor(/^opened 3 resume 15$/);
        children[3] = resumed;
        await allExit(children);
        assert.ok(owner.lines.includes("committed 10 50"), owner.lines.join("\n"));
        assert.deepEqual(await s3.list("_tokens/"), []);
        assert.ok(
          (await committedValues(s3)) === (await committedValues(fx.reference)),
          "read back through S3",
        );
        assert.deepEqual(
          differences(await dataObjects(s3), await dataObjects(fx.reference)),
          [],
          "shards and zarr.json",
        );
      },
    );
  });
}

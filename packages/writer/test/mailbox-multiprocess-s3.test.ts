import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { interopPython } from "@zarr-stream/test-support/python";
import { S3_SERVER_KINDS } from "@zarr-stream/test-support/s3-server";
import { allExit, committedValues, dataObjects, differences, launch, mpS3Fixture } from "./mp-s3-fixture.js";
import { MP_WRITERS } from "./mp-workload.js";

const READ_TS = fileURLToPath(new URL("../../test/read_s3_tensorstore.py", import.meta.url));
const ARRAYS = ["temperature", "zonal", "total", "time", "lat"];
for (const kind of S3_SERVER_KINDS) {
  describe(`8 OS processes write one S3 store (${kind}) through the run API`, () => {
    const fx = mpS3Fixture(`mp-s3-${kind}`, kind);
    it(
      `mailbox: 1 owner + 7 contributors on ${kind}, 50 records, a commit every 5, equal a single writer bitwise`,
      { skip: fx.skip },
      async () => {
        const started = Date.now();
        const url = `s3://${fx.bucket}/full`;
        // All at once, as a launcher starts them: contributors wait until the owner has created the store.
        const children = Array.from({ length: MP_WRITERS }, (_, id) => launch(fx, url, id));
        const owner = children[0]!;
        await allExit(children);
        const commits = owner.lines.filter((l) => l.startsWith("committed "));
        assert.deepEqual(
          commits,
          Array.from({ length: 10 }, (_, i) => `committed ${i + 1} ${5 * (i + 1)}`),
        );
        assert.deepEqual(owner.lines[0], "opened 0 create 0");
        for (const [id, c] of children.entries())
          assert.ok(c.lines.includes(`done ${id}`), c.lines.join("\n"));
        console.log(`# 8-process S3 run on ${kind}: ${Date.now() - started} ms`);

        const s3 = fx.server.store({ prefix: "full" });
        assert.deepEqual(await s3.list("_tokens/"), [], "every round was cleared");
        assert.ok(
          (await committedValues(s3)) === (await committedValues(fx.reference)),
          "read back through S3 by our reader",
        );
        assert.deepEqual(
          differences(await dataObjects(s3), await dataObjects(fx.reference)),
          [],
          "shards and zarr.json, bytewise",
        );

        // A second implementation reads the S3 store over HTTP: TensorStore's s3 driver.
        const py = interopPython().require();
        const res = spawnSync(py, [READ_TS, fx.server.endpoint, fx.bucket, "full", fx.tmp, ...ARRAYS], {
          encoding: "utf8",
          env: { ...process.env, ...fx.server.env },
        });
        assert.equal(res.status, 0, res.stderr);
        const shapes = JSON.parse(res.stdout) as number[][];
        for (const [i, name] of ARRAYS.entries()) {
          const layout = await readArrayLayout(fx.reference, name);
          assert.deepEqual(shapes[i], layout.shape, `${name} shape in TensorStore`);
          const ours = await readArrayRegion(
            fx.reference,
            name,
            layout,
            layout.shape.map((n) => [0, n]),
          );
          const want = new Uint8Array(ours.buffer, ours.byteOffset, ours.byteLength);
          assert.ok(want.length > 0);
          assert.deepEqual(
            new Uint8Array(readFileSync(join(fx.tmp, `${name}.bin`))),
            want,
            `${name} via TensorStore s3`,
          );
        }
      },
    );
  });
}

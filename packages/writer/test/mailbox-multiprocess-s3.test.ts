import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { REPO } from "@zarr-stream/store/test/s3-server";
import { allExit, committedValues, dataObjects, differences, launch, mpS3Fixture } from "./mp-s3-fixture.js";
import { MP_WRITERS } from "./mp-workload.js";

const READ_TS = fileURLToPath(new URL("../../test/read_s3_tensorstore.py", import.meta.url));
const ARRAYS = ["temperature", "zonal", "total", "time", "lat"];
const fx = mpS3Fixture("mp-s3");

describe("8 OS processes write one S3 store through the mailbox", { skip: fx.skip }, () => {
  it("mailbox: 1 owner + 7 contributors, 50 records, a commit every 5, equal a single writer bitwise", async () => {
    const started = Date.now();
    const url = `s3://${fx.bucket}/full`;
    const owner = launch(fx, url, 0, "create");
    await owner.waitFor(/^ready 0$/);
    const children = [
      owner,
      ...Array.from({ length: MP_WRITERS - 1 }, (_, i) => launch(fx, url, i + 1, "join")),
    ];
    await allExit(children);
    const commits = owner.lines.filter((l) => l.startsWith("committed "));
    assert.deepEqual(
      commits,
      Array.from({ length: 10 }, (_, i) => `committed ${i + 1} ${5 * (i + 1)}`),
    );
    assert.equal(owner.lines.filter((l) => l.startsWith("timeout")).length, 0);
    console.log(`# 8-process S3 run: ${Date.now() - started} ms`);

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
    const py = join(REPO, ".venv", "bin", "python");
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
  });
});

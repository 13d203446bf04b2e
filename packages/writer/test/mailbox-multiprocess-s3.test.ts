import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { MANIFEST_KEY, readArrayLayout, readArrayRegion, readOutputManifest } from "@zarr-stream/reader";
import { FsStore, type Store, snapshotStore } from "@zarr-stream/store";
import { REPO, type S3Server, s3SkipReason, startS3Server } from "@zarr-stream/store/test/s3-server";
import { ZarrStreamWriter } from "../src/index.js";
import { type Child, startChild } from "./child-process.js";
import { committedDump, recordArrays } from "./helpers.js";
import { MP_COMMIT_EVERY, MP_RECORDS, MP_SCHEMA, MP_WRITERS, mpT } from "./mp-workload.js";

const CHILD = fileURLToPath(new URL("./mailbox-child.js", import.meta.url));
const READ_TS = fileURLToPath(new URL("../../test/read_s3_tensorstore.py", import.meta.url));
const ARRAYS = ["temperature", "zonal", "total", "time", "lat"];
const skip = s3SkipReason();
const tmp = mkdtempSync(join(tmpdir(), "zs-mp-s3-"));
let server: S3Server;
let bucket: string;
let reference: FsStore;

before(async () => {
  if (skip !== undefined) return;
  server = await startS3Server();
  bucket = await server.makeBucket();
  // The single-writer store the 8-process runs must reproduce, on local disk.
  reference = new FsStore(join(tmp, "single"));
  const w = await ZarrStreamWriter.create(reference, MP_SCHEMA, { kind: "single" });
  for (let r = 0; r < MP_RECORDS; r++) {
    await w.writeRecord(mpT(r), recordArrays(MP_SCHEMA, r, {}));
    if ((r + 1) % MP_COMMIT_EVERY === 0) await w.flush();
  }
  await w.close();
});
after(async () => {
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

/** Array data and array metadata: everything but the manifest, whose writer count and layout differ by design. */
async function dataObjects(store: Store): Promise<Map<string, string>> {
  const snap = await snapshotStore(store);
  return new Map(
    [...snap].filter(([k]) => k !== MANIFEST_KEY).map(([k, v]) => [k, Buffer.from(v).toString("hex")]),
  );
}

function launch(url: string, id: number, mode: string, env: Record<string, string> = {}): Child {
  return startChild(CHILD, [url, String(id), mode], { ...server.env, ...env });
}

async function allExit(children: Child[]): Promise<void> {
  for (const [i, c] of children.entries()) {
    const { code, signal, stderr } = await c.exited;
    assert.equal(code, 0, `writer ${i} ended with ${code ?? signal}: ${stderr}`);
  }
}

describe("8 OS processes write one S3 store through the mailbox", { skip }, () => {
  it("mailbox: 1 owner + 7 contributors, 50 records, a commit every 5, equal a single writer bitwise", async () => {
    const started = Date.now();
    const url = `s3://${bucket}/full`;
    const owner = launch(url, 0, "create");
    await owner.waitFor(/^ready 0$/);
    const children = [owner, ...Array.from({ length: MP_WRITERS - 1 }, (_, i) => launch(url, i + 1, "join"))];
    await allExit(children);
    const commits = owner.lines.filter((l) => l.startsWith("committed "));
    assert.deepEqual(
      commits,
      Array.from({ length: 10 }, (_, i) => `committed ${i + 1} ${5 * (i + 1)}`),
    );
    assert.equal(owner.lines.filter((l) => l.startsWith("timeout")).length, 0);
    console.log(`# 8-process S3 run: ${Date.now() - started} ms`);

    const s3 = server.store({ prefix: "full" });
    assert.deepEqual(await s3.list("_tokens/"), [], "every round was cleared");
    assert.equal(
      await committedDump(s3),
      await committedDump(reference),
      "read back through S3 by our reader",
    );
    assert.deepEqual(
      await dataObjects(s3),
      await dataObjects(reference),
      "every shard and zarr.json, bytewise",
    );

    // A second implementation reads the S3 store over HTTP: TensorStore's s3 driver.
    const py = join(REPO, ".venv", "bin", "python");
    const res = spawnSync(py, [READ_TS, server.endpoint, bucket, "full", tmp, ...ARRAYS], {
      encoding: "utf8",
      env: { ...process.env, ...server.env },
    });
    assert.equal(res.status, 0, res.stderr);
    const shapes = JSON.parse(res.stdout) as number[][];
    for (const [i, name] of ARRAYS.entries()) {
      const layout = await readArrayLayout(reference, name);
      assert.deepEqual(shapes[i], layout.shape, `${name} shape in TensorStore`);
      const ours = await readArrayRegion(
        reference,
        name,
        layout,
        layout.shape.map((n) => [0, n]),
      );
      const want = new Uint8Array(ours.buffer, ours.byteOffset, ours.byteLength);
      assert.ok(want.length > 0);
      assert.deepEqual(
        new Uint8Array(readFileSync(join(tmp, `${name}.bin`))),
        want,
        `${name} via TensorStore s3`,
      );
    }
  });

  it("mailbox: a contributor killed with SIGKILL is named by the owner's timeout, resumes from S3, and the run ends equal", async () => {
    const url = `s3://${bucket}/killed`;
    const s3 = server.store({ prefix: "killed" });
    const owner = launch(url, 0, "create", { ZS_COLLECT_TIMEOUT_MS: "1500" });
    await owner.waitFor(/^ready 0$/);
    const children = [owner];
    for (let id = 1; id < MP_WRITERS; id++) {
      children.push(launch(url, id, "join", id === 3 ? { ZS_PAUSE_AFTER: "17" } : {}));
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

    const resumed = launch(url, 3, "resume");
    await resumed.waitFor(/^ready 3$/);
    children[3] = resumed;
    await allExit(children);
    assert.ok(owner.lines.includes("committed 10 50"), owner.lines.join("\n"));
    assert.deepEqual(await s3.list("_tokens/"), []);
    assert.equal(await committedDump(s3), await committedDump(reference));
    assert.deepEqual(await dataObjects(s3), await dataObjects(reference));
  });
});

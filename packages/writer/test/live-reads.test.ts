import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { readOutputManifest } from "@zarr-stream/reader";
import { FsStore, S3Store, type Store } from "@zarr-stream/store";
import {
  S3_SERVER_KINDS,
  type S3Server,
  s3ServerSkipReason,
  startS3Server,
} from "@zarr-stream/test-support/s3-server";
import { leaseKey } from "../src/index.js";
import { type Child, startChild } from "./child-process.js";
import { LIVE_WRITERS } from "./live-workload.js";

/**
 * Readers see committed data only while an owner and 3 contributors (OS processes, the run API) commit a
 * record at a time: 4 reader processes read the newest committed record, random ones and regions across
 * the writers' regions, and compare every value bitwise with the generator's (consistent-reads.md).
 * Midway, writer 1 is started a second time (a job submitted twice): the second process takes the id
 * over, the first stops `Fenced` (or had posted all it writes already, and its posts are stale), and
 * the run ends complete (fencing.md, "Sealed tokens").
 */
const CHILD = fileURLToPath(new URL("./live-child.js", import.meta.url));
const READERS = 4;
/** Records written per backend: commits go on for about as long as the readers read. */
const RECORDS: Record<string, number> = { FsStore: 30, moto: 30, versitygw: 30 };
/** Record reads (one variable of one record, through readRecord or a region) per backend, over 4 readers. */
const MIN_RECORD_READS = 10_000;

interface Counts {
  recordReads: number;
  regionReads: number;
  regionRecords: number;
  values: number;
  mismatches: number;
  errors: number;
  iterations: number;
  firstCommitted: number;
  lastCommitted: number;
  distinctCommitted: number;
  ms: number;
}

async function liveRun(
  backend: string,
  url: string,
  env: Record<string, string>,
  probe: Store,
): Promise<void> {
  const records = RECORDS[backend]!;
  const started = Date.now();
  // Readers first: they wait for the first commit, so they see the committed count grow from its start.
  const readers = Array.from({ length: READERS }, (_, i) =>
    startChild(CHILD, ["read", url, String(1 + i * 7919), String(MIN_RECORD_READS / READERS)], env),
  );
  const writers: Child[] = Array.from({ length: LIVE_WRITERS }, (_, id) =>
    startChild(CHILD, ["write", url, String(id), String(records)], env),
  );
  // The second start of writer 1, as soon as the first has joined: on a fast store a contributor posts
  // well ahead of the owner's commits, so a later start would find it done.
  while ((await probe.size(leaseKey(1))) === undefined) await sleep(5);
  const again = startChild(CHILD, ["write", url, "1", String(records)], env);
  const first = await writers[1]!.exited;
  assert.ok(
    first.code === 0 || /Fenced/.test(first.stderr),
    `the first writer 1 ended with ${first.code ?? first.signal}, not Fenced: ${first.stderr}`,
  );
  console.log(
    `# ${backend}: the first writer 1 ${first.code === 0 ? "had posted all it writes" : "was Fenced"}`,
  );
  const rest = [...writers.filter((_, id) => id !== 1), again, ...readers];
  const ends = await Promise.all(rest.map((c) => c.exited));
  const names = [
    "writer 0",
    "writer 2",
    "writer 3",
    "the second writer 1",
    ...readers.map((_, i) => `reader ${i}`),
  ];
  // Every process's stderr on a failure: one process's error is often another's doing.
  const report = ends.map((e, i) => `${names[i]} (${e.code ?? e.signal}): ${e.stderr}`).join("\n");
  for (const [i, e] of ends.entries()) assert.equal(e.code, 0, `${names[i]} failed:\n${report}`);
  assert.equal((await readOutputManifest(probe)).n_records, records, "the run ended complete");
  const counts = readers.map((c) => JSON.parse(c.lines.at(-1)!) as Counts);
  const total = (k: keyof Counts) => counts.reduce((s, c) => s + c[k], 0);
  const ms = Date.now() - started;
  const reads = total("recordReads") + total("regionRecords");
  console.log(
    `# live reads on ${backend}: ${total("recordReads")} record reads, ${total("regionReads")} region reads ` +
      `(${total("regionRecords")} records), ${total("values")} values, ${total("mismatches")} mismatches, ` +
      `${total("errors")} errors; ${reads} record reads in all; committed seen ${counts.map((c) => `${c.firstCommitted}..${c.lastCommitted}`).join(" ")}; ${ms} ms`,
  );
  const stderrs = (await Promise.all(readers.map((c) => c.exited))).map((e) => e.stderr).join("");
  assert.equal(total("mismatches"), 0, stderrs);
  assert.equal(total("errors"), 0, stderrs);
  assert.ok(reads >= MIN_RECORD_READS, `${reads} record reads`);
  assert.ok(total("recordReads") > 0 && total("regionReads") > 0);
  for (const [i, c] of counts.entries()) {
    // Reads overlapped commits: each reader started early and read under many committed counts.
    assert.ok(c.firstCommitted < records / 4, `reader ${i} first saw ${c.firstCommitted} committed`);
    assert.ok(c.distinctCommitted >= records / 4, `reader ${i} saw ${c.distinctCommitted} committed counts`);
  }
}

describe("4 reader processes read committed values only while 4 writer processes commit, one of them started twice", () => {
  it("FsStore: 0 wrong values", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zs-live-reads-"));
    after(() => rmSync(dir, { recursive: true, force: true }));
    await liveRun("FsStore", join(dir, "store"), {}, new FsStore(join(dir, "store")));
  });

  for (const kind of S3_SERVER_KINDS) {
    describe(`S3 (${kind})`, () => {
      let server: S3Server<S3Store>;
      after(() => server?.stop());
      it(`${kind}: 0 wrong values`, { skip: s3ServerSkipReason(kind) }, async () => {
        server = await startS3Server(kind, (o) => new S3Store(o));
        const bucket = await server.makeBucket();
        await liveRun(kind, `s3://${bucket}/live`, server.env, server.store({ bucket, prefix: "live" }));
      });
    });
  }
});

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { MANIFEST_KEY, readArrayLayout, readArrayRegion, readOutputManifest } from "@zarr-stream/reader";
import { CommitError, Fenced } from "@zarr-stream/spec";
import { FsStore, S3Store, type Store } from "@zarr-stream/store";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { ZarrStreamWriter } from "../src/index.js";
import { serializeManifest } from "../src/manifest-doc.js";
import { gridSchema, recordArrays } from "./helpers.js";

const skip = s3ServerSkipReason("moto");
const tmp = mkdtempSync(join(tmpdir(), "zs-owners-"));
let server: S3Server<S3Store> | undefined;
let n = 0;

before(async () => {
  if (skip !== undefined) return;
  server = await startS3Server("moto", (o) => new S3Store(o));
  await server.makeBucket();
});
after(async () => {
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const SCHEMA = gridSchema();
const OWNER = { kind: "owner", nWriters: 1 } as const;

/** Two handles on one store, as two machines would have (separate clients, no shared memory). */
const backends: [string, () => [Store, Store]][] = [
  [
    "S3Store",
    () => {
      const prefix = `owners-${n++}`;
      return [server!.store({ prefix }), server!.store({ prefix })];
    },
  ],
  [
    "FsStore",
    () => {
      const root = join(tmp, `owners-${n++}`);
      return [new FsStore(root), new FsStore(root)];
    },
  ],
];

/**
 * Owner A creates the store; owner B appears by mistake and resumes it. Each writes records 0..2 with its
 * own t. A's first full time shard meets B's lease before it is written, so A may learn it is Fenced as
 * early as its next record.
 */
async function twoOwners(a: Store, b: Store): Promise<[ZarrStreamWriter, ZarrStreamWriter]> {
  const wa = await ZarrStreamWriter.create(a, SCHEMA, OWNER);
  const wb = await ZarrStreamWriter.resume(b, OWNER);
  for (let r = 0; r < 3; r++) {
    await wa.writeRecord(10 * (r + 1), recordArrays(SCHEMA, r, {})).catch((e) => {
      if (!(e instanceof Fenced)) throw e;
    });
    await wb.writeRecord(10 * (r + 1) + 1, recordArrays(SCHEMA, r, {}));
  }
  return [wa, wb];
}

/** How a fenced-out owner is refused: its lease is gone (Fenced), or its manifest version is stale. */
const isFencedOut = (e: unknown) =>
  e instanceof Fenced || (e instanceof CommitError && e.reason === "concurrent-owner");

for (const [name, make] of backends) {
  describe(`two owners on one ${name} store`, { skip: name === "S3Store" ? skip : undefined }, () => {
    it("the owner that resumed holds the lease: the first owner's commit is refused and changes nothing", async () => {
      const [a, b] = make();
      const [wa, wb] = await twoOwners(a, b);
      const before = await a.get(MANIFEST_KEY);
      await assert.rejects(async () => wa.commit([await wa.flush()]), isFencedOut);
      assert.deepEqual(await a.get(MANIFEST_KEY), before, "the refused commit wrote no manifest");
      const won = await wb.commit([await wb.flush()]);
      assert.deepEqual(await b.get(MANIFEST_KEY), serializeManifest(won.manifest));
      const m = (await readOutputManifest(b)) as { commit_seq: number; n_records: number; last_t: number };
      assert.deepEqual([m.commit_seq, m.n_records, m.last_t], [1, 3, 31], "the resumed owner's records");
      await assert.rejects(
        wa.writeRecord(100, recordArrays(SCHEMA, 3, {})),
        Fenced,
        "a fenced handle stays fenced",
      );
    });

    it("two owners committing at once: exactly one wins, the store shows its manifest and its t values", async () => {
      const [a, b] = make();
      const [wa, wb] = await twoOwners(a, b);
      const results = await Promise.allSettled([
        (async () => wa.commit([await wa.flush()]))(),
        (async () => wb.commit([await wb.flush()]))(),
      ]);
      const winners = results.filter((r) => r.status === "fulfilled");
      assert.equal(winners.length, 1, `${winners.length} commits succeeded`);
      const loser = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
      assert.ok(isFencedOut(loser.reason), String(loser.reason));
      const receipt = (winners[0] as PromiseFulfilledResult<Awaited<ReturnType<ZarrStreamWriter["commit"]>>>)
        .value;
      assert.deepEqual(await a.get(MANIFEST_KEY), serializeManifest(receipt.manifest));
      const t = await readRecordTimes(a, 3);
      assert.deepEqual(t, [
        receipt.manifest.last_t! - 20,
        receipt.manifest.last_t! - 10,
        receipt.manifest.last_t,
      ]);
    });
  });
}

/** The committed time coordinate, read back through zarr metadata and shards. */
async function readRecordTimes(store: Store, n: number): Promise<number[]> {
  const layout = await readArrayLayout(store, "time");
  return [...((await readArrayRegion(store, "time", layout, [[0, n]])) as Float64Array)];
}

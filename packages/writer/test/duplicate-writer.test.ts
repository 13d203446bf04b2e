// A job started twice (fencing.md, "Sealed tokens"): two handles of one contributor id, the newer one
// opened behind the older, on MemoryStore, FsStore and S3 (moto). Every store is reached through separate
// store objects, as separate processes would.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { readOutputManifest, readRecord } from "@zarr-stream/reader";
import { CommitError, Fenced, type StreamSchema } from "@zarr-stream/spec";
import { MemoryStore, S3Store, type Store } from "@zarr-stream/store";
import { interleaved } from "@zarr-stream/test-support/interleave";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { collectTokens, INTENT_KEY, leaseKey, postToken, StreamRun, ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";
import { bits, type Location, storeLocations } from "./store-locations.js";

const { s3Skip, backends } = storeLocations("dup");
/** The second S3 server: versitygw, a real gateway, beside the moto emulator storeLocations runs. */
const gwSkip = s3ServerSkipReason("versitygw");
let gateway: S3Server<S3Store> | undefined;
let gwPrefixes = 0;
before(async () => {
  if (gwSkip !== undefined) return;
  gateway = await startS3Server("versitygw", (o) => new S3Store(o));
  await gateway.makeBucket();
});
after(async () => gateway?.stop());

const locations: [string, () => Location, string | undefined][] = [
  [
    "MemoryStore",
    () => {
      const store = new MemoryStore();
      return () => store;
    },
    undefined,
  ],
  ...backends.map(
    ([name, make]) =>
      [name === "S3Store" ? "S3Store (moto)" : name, make, name === "S3Store" ? s3Skip : undefined] as const,
  ),
  [
    "S3Store (versitygw)",
    () => {
      const prefix = `dup-gw-${gwPrefixes++}`;
      return () => gateway!.store({ prefix });
    },
    gwSkip,
  ],
] as [string, () => Location, string | undefined][];

/** A time shard of 4 records, so records 0–4 fill time shard 0 and open time shard 1. */
const SCHEMA: StreamSchema = gridSchema({ shard_shape: { time: 4, lat: 2, lon: 6 } });
const REGIONS = [{ lat: [0, 2] as [number, number] }, { lat: [2, 4] as [number, number] }];
const t = (r: number) => 60 * (r + 1);

/** Record r as writer `id` writes it; `variant` 1 is other data for the same record (another job's). */
function arrays(id: number, r: number, variant = 0) {
  return recordArrays(SCHEMA, r + 1000 * variant, REGIONS[id]!, (_, partitioned) => partitioned || id === 0);
}

/** Committed record `i` holds writer 1's `variant` of record i in its region and the owner's in the rest. */
async function assertCommitted(store: Store, i: number, variant: number): Promise<void> {
  const got = await readRecord(store, "temperature", i);
  const all = got.data as Float64Array;
  const own = arrays(0, i).temperature!;
  const mine = arrays(1, i, variant).temperature!;
  assert.equal(bits(all.subarray(0, own.length)), bits(own), `record ${i}, writer 0's region`);
  assert.equal(
    bits(all.subarray(own.length)),
    bits(mine),
    `record ${i}, writer 1's region (variant ${variant})`,
  );
}

async function rejectsFenced(p: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(p, (err) => err instanceof Fenced, `${what} must be Fenced`);
}

for (const [name, makeLocation, skip] of locations) {
  describe(`a contributor started twice, ${name}`, { skip }, () => {
    it("the issue's run: the older handle is Fenced at its first commit, committed records are the newer's", async () => {
      const at = makeLocation();
      const open = (id: number) =>
        StreamRun.open({
          store: at(),
          id,
          count: 2,
          region: REGIONS[id],
          schema: SCHEMA,
          pollMs: 5,
          env: {},
        });
      const owner = await open(0);
      const older = await open(1);
      const newer = await open(1);
      for (const r of [0, 1]) await older.write(t(r), arrays(1, r, 1));
      await rejectsFenced(older.commit(), "the older handle's commit");
      await rejectsFenced(
        older.write(t(2), arrays(1, 2, 1)).then(() => older.commit()),
        "its next call",
      );
      for (const round of [
        [0, 1],
        [2, 3, 4],
      ]) {
        for (const r of round) {
          await newer.write(t(r), arrays(1, r));
          await owner.write(t(r), arrays(0, r));
        }
        await Promise.all([newer.commit(), owner.commit()]);
      }
      await newer.close();
      await owner.close();
      const store = at();
      assert.equal((await readOutputManifest(store)).n_records, 5);
      for (let i = 0; i < 5; i++) await assertCommitted(store, i, 0);
    });

    it("a token the older handle flushed before the takeover is refused; the newer's commits its data", async () => {
      const at = makeLocation();
      const owner = await ZarrStreamWriter.create(at(), SCHEMA, { kind: "owner", nWriters: 2 }, REGIONS[0]);
      const older = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      for (let r = 0; r < 5; r++) await older.writeRecord(t(r), arrays(1, r, 1));
      const stale = await older.flush();
      const newer = await ZarrStreamWriter.resume(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      for (const r of [0, 1]) await newer.writeRecord(t(r), arrays(1, r));
      const live = await newer.flush();
      for (let r = 0; r < 5; r++) await owner.writeRecord(t(r), arrays(0, r));
      const own = await owner.flush();
      const before = await readOutputManifest(at());
      await assert.rejects(
        owner.commit([own, stale]),
        (err) => err instanceof CommitError && err.reason === "stale-token" && err.writers.includes(1),
      );
      assert.deepEqual(await readOutputManifest(at()), before, "a refused commit changes nothing");
      assert.equal(await at().get(INTENT_KEY), undefined, "a refused commit withdraws its intent");
      // The owner's own token carries five records, the live token two: the commit that follows is the
      // owner's two records against the newer handle's.
      const owner2 = await ZarrStreamWriter.resume(at(), { kind: "owner", nWriters: 2 }, REGIONS[0]);
      for (const r of [0, 1]) await owner2.writeRecord(t(r), arrays(0, r));
      await owner2.commit([await owner2.flush(), live]);
      for (const i of [0, 1]) await assertCommitted(at(), i, 0);
      await rejectsFenced(older.flush(), "the older handle's next flush");
    });

    it("a takeover while the owner commits the older handle's sealed token: the newer handle waits for that commit and goes on from it", async () => {
      const at = makeLocation();
      let arm = false;
      let newerOpen: Promise<ZarrStreamWriter> | undefined;
      let opened = false;
      let openedBeforeManifest: boolean | undefined;
      // The owner's seal check has read writer 1's lease (the older handle's, with its seal); the newer
      // handle takes the lease over before the owner writes the manifest.
      const gated = interleaved(
        at(),
        leaseKey(1),
        async () => {
          if (!arm) return;
          arm = false;
          const probe = at();
          const epochBefore = JSON.parse(new TextDecoder().decode((await probe.get(leaseKey(1)))!)).epoch;
          newerOpen = ZarrStreamWriter.resume(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
          newerOpen.then(() => {
            opened = true;
          });
          for (;;) {
            const lease = JSON.parse(new TextDecoder().decode((await probe.get(leaseKey(1)))!));
            if (lease.epoch > epochBefore) break;
            await sleep(2);
          }
          await sleep(150);
          openedBeforeManifest = opened;
        },
        { reads: ["get"], times: Number.POSITIVE_INFINITY },
      );
      const owner = await ZarrStreamWriter.create(
        gated.store,
        SCHEMA,
        { kind: "owner", nWriters: 2 },
        REGIONS[0],
      );
      const older = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      await older.writeRecord(t(0), arrays(1, 0, 1));
      const sealed = await older.flush();
      await owner.writeRecord(t(0), arrays(0, 0));
      const own = await owner.flush();
      arm = true;
      await owner.commit([own, sealed]);
      assert.ok(newerOpen !== undefined, "the newer handle opened during the commit");
      assert.equal(openedBeforeManifest, false, "the newer handle's open waited for the commit in flight");
      const newer = await newerOpen;
      assert.equal(newer.committedCount, 1, "the newer handle goes on from the commit that landed");
      await newer.writeRecord(t(1), arrays(1, 1));
      const live = await newer.flush();
      await owner.writeRecord(t(1), arrays(0, 1));
      await owner.commit([await owner.flush(), live]);
      await assertCommitted(at(), 0, 1);
      await assertCommitted(at(), 1, 0);
      await rejectsFenced(older.flush(), "the older handle's next flush");
    });

    it("a landed commit removes its own intent only: another owner's, announced since its manifest write, stays", async () => {
      const at = makeLocation();
      const foreign = new TextEncoder().encode(
        `${JSON.stringify({ schema: "zarr-stream/commit-intent/v1", commit_seq: 2, owner: "another-owner" })}\n`,
      );
      let arm = false;
      // Between this owner's manifest write and its clean-up, an owner that resumed meanwhile announces
      // its own commit (this owner is then a zombie whose last write landed).
      const gated = interleaved(
        at(),
        "output_manifest.json",
        async () => {
          if (!arm) return;
          arm = false;
          await at().put(INTENT_KEY, foreign);
        },
        { reads: ["put", "putIfVersion"], times: Number.POSITIVE_INFINITY },
      );
      const owner = await ZarrStreamWriter.create(
        gated.store,
        SCHEMA,
        { kind: "owner", nWriters: 2 },
        REGIONS[0],
      );
      const contributor = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      await contributor.writeRecord(t(0), arrays(1, 0));
      await owner.writeRecord(t(0), arrays(0, 0));
      const tokens = [await owner.flush(), await contributor.flush()];
      arm = true;
      await owner.commit(tokens);
      assert.equal(arm, false, "the manifest write was held");
      assert.deepEqual(await at().get(INTENT_KEY), foreign, "the other owner's intent is left in place");
      await at().delete(INTENT_KEY);
      await contributor.writeRecord(t(1), arrays(1, 1));
      await owner.writeRecord(t(1), arrays(0, 1));
      await owner.commit([await owner.flush(), await contributor.flush()]);
      assert.equal(await at().get(INTENT_KEY), undefined, "a landed commit removes its own intent");
    });

    it("a contributor of a duplicate launch that takes a lease from the launch that goes on puts it back and is Fenced; the other handle goes on", async () => {
      const at = makeLocation();
      const owner = await ZarrStreamWriter.create(at(), SCHEMA, { kind: "owner", nWriters: 2 }, REGIONS[0], {
        job: "launch-b",
      });
      const live = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, REGIONS[1], {
        job: "launch-b",
      });
      const leaseBefore = await at().get(leaseKey(1));
      // Launch A's contributor checked writer 0's lease before launch B's owner took it (RunOpener) and
      // takes writer 1's lease only now.
      await assert.rejects(
        ZarrStreamWriter.resume(at(), { kind: "contributor", id: 1 }, REGIONS[1], undefined, {
          job: "launch-a",
        }),
        (err: Error) => err instanceof Fenced && /launch launch-b/.test(err.message),
      );
      assert.deepEqual(await at().get(leaseKey(1)), leaseBefore, "the lease is put back as it was");
      for (const r of [0, 1]) {
        await live.writeRecord(t(r), arrays(1, r));
        await owner.writeRecord(t(r), arrays(0, r));
      }
      await owner.commit([await owner.flush(), await live.flush()]);
      for (const i of [0, 1]) await assertCommitted(at(), i, 0);
    });

    it("a handle whose lease a duplicate launch holds for the moment (taken, not yet put back) takes it back and goes on", async () => {
      const at = makeLocation();
      const owner = await ZarrStreamWriter.create(at(), SCHEMA, { kind: "owner", nWriters: 2 }, REGIONS[0], {
        job: "launch-b",
      });
      const live = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, REGIONS[1], {
        job: "launch-b",
      });
      // Launch A's contributor has just taken writer 1's lease and not yet read writer 0's.
      const lease = JSON.parse(new TextDecoder().decode((await at().get(leaseKey(1)))!));
      const taken = {
        ...lease,
        epoch: lease.epoch + 1,
        nonce: "launch-a-handle",
        job: "launch-a",
        sealed: [],
      };
      await at().put(leaseKey(1), new TextEncoder().encode(JSON.stringify(taken)));
      for (const r of [0, 1]) {
        await live.writeRecord(t(r), arrays(1, r));
        await owner.writeRecord(t(r), arrays(0, r));
      }
      await owner.commit([await owner.flush(), await live.flush()]);
      for (const i of [0, 1]) await assertCommitted(at(), i, 0);
      const now = JSON.parse(new TextDecoder().decode((await at().get(leaseKey(1)))!));
      assert.equal(now.nonce, lease.nonce, "writer 1's lease is the live handle's again");
    });

    it("identical data: the older handle's token commits the same bytes, and the older handle is Fenced next", async () => {
      const at = makeLocation();
      const owner = await ZarrStreamWriter.create(at(), SCHEMA, { kind: "owner", nWriters: 2 }, REGIONS[0]);
      const older = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      const newer = await ZarrStreamWriter.resume(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      for (const r of [0, 1]) {
        await older.writeRecord(t(r), arrays(1, r));
        await newer.writeRecord(t(r), arrays(1, r));
        await owner.writeRecord(t(r), arrays(0, r));
      }
      await rejectsFenced(older.flush(), "the older handle's flush, though its bytes equal the newer's");
      const live = await newer.flush();
      await owner.commit([await owner.flush(), live]);
      for (const i of [0, 1]) await assertCommitted(at(), i, 0);
    });

    it("the mailbox keeps the live handle's token: a stale post is replaced, and the owner waits past it", async () => {
      const at = makeLocation();
      await ZarrStreamWriter.create(at(), SCHEMA, { kind: "owner", nWriters: 2 }, REGIONS[0]);
      const older = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      await older.writeRecord(t(0), arrays(1, 0, 1));
      const stale = await older.flush();
      await postToken(at(), 1, stale);
      const newer = await ZarrStreamWriter.resume(at(), { kind: "contributor", id: 1 }, REGIONS[1]);
      await assert.rejects(
        collectTokens(at(), 1, 2, { timeoutMs: 50, pollMs: 10 }),
        (err: Error) => /writer 1/.test(err.message) && /stale/.test(err.message),
      );
      await newer.writeRecord(t(0), arrays(1, 0));
      await newer.writeRecord(t(1), arrays(1, 1));
      const live = await newer.flush();
      await postToken(at(), 1, live);
      const own = { ...live, writer: 0, region: REGIONS[0]! };
      await postToken(at(), 1, own);
      const got = await collectTokens(at(), 1, 2, { timeoutMs: 0 });
      assert.deepEqual(got[1], live);
    });
  });
}

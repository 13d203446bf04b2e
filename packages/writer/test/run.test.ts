import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Fenced, ProtocolError, SchemaError, StoreError } from "@zarr-stream/spec";
import { S3Store, type Store } from "@zarr-stream/store";
import {
  MailboxTimeout,
  RECEIPT_PREFIX,
  type RunEvent,
  runRank,
  StreamRun,
  ZarrStreamWriter,
} from "../src/index.js";
import { leaseKey } from "../src/writer-lease.js";
import { FaultStore, InjectedFault } from "./fault-store.js";
import { bytesOf, committedDump, gridSchema, newStore, recordArrays } from "./helpers.js";

const SCHEMA = gridSchema();
const REGIONS = [{ lat: [0, 2] as [number, number] }, { lat: [2, 4] as [number, number] }];
const RECORDS = 12;
const t = (r: number) => 60 * (r + 1);

/** Every committed value, without the manifest's format name (a Single writer's store is v1). */
async function values(store: Store): Promise<string> {
  return JSON.stringify((JSON.parse(await committedDump(store)) as unknown[]).slice(1));
}

async function singleWriterValues(): Promise<string> {
  const store = newStore();
  const w = await ZarrStreamWriter.create(store, SCHEMA, { kind: "single" });
  for (let r = 0; r < RECORDS; r++) await w.writeRecord(t(r), recordArrays(SCHEMA, r, {}));
  await w.close();
  return values(store);
}

function openRun(store: Store, id: number, over: Partial<Parameters<typeof StreamRun.open>[0]> = {}) {
  return StreamRun.open({
    store,
    id,
    count: 2,
    region: REGIONS[id],
    schema: SCHEMA,
    commitEvery: 5,
    pollMs: 5,
    timeoutMs: 20_000,
    env: {},
    ...over,
  });
}

/** Writes records [from, to) of writer `run.rank.id` (the owner adds the unpartitioned arrays). */
async function writeRecords(run: StreamRun, to = RECORDS, from = run.nextRecord, seed = 0): Promise<void> {
  for (let r = from; r < to; r++) {
    await run.write(
      t(r),
      recordArrays(SCHEMA, r + seed, REGIONS[run.rank.id]!, (_, p) => p || run.isOwner),
    );
  }
}

describe("runRank: writer id and count from the launcher's environment", () => {
  it("run: Open MPI, MPICH, Slurm and a Kubernetes Indexed Job give id and count; explicit values win", () => {
    assert.deepEqual(runRank({}, { OMPI_COMM_WORLD_RANK: "2", OMPI_COMM_WORLD_SIZE: "4" }), {
      id: 2,
      count: 4,
      source: "openmpi",
    });
    assert.deepEqual(runRank({}, { PMI_RANK: "0", PMI_SIZE: "3" }), { id: 0, count: 3, source: "mpich" });
    assert.deepEqual(runRank({}, { SLURM_PROCID: "7", SLURM_NTASKS: "8" }), {
      id: 7,
      count: 8,
      source: "slurm",
    });
    // Every task of an array job is rank 0 of its own job step: the task id decides.
    assert.deepEqual(
      runRank(
        {},
        { SLURM_ARRAY_TASK_ID: "3", SLURM_ARRAY_TASK_COUNT: "4", SLURM_PROCID: "0", SLURM_NTASKS: "1" },
      ),
      { id: 3, count: 4, source: "slurm-array" },
    );
    assert.deepEqual(runRank({ count: 5 }, { JOB_COMPLETION_INDEX: "4" }), {
      id: 4,
      count: 5,
      source: "kubernetes",
    });
    assert.deepEqual(runRank({ id: 1, count: 2 }, { OMPI_COMM_WORLD_RANK: "3", OMPI_COMM_WORLD_SIZE: "4" }), {
      id: 1,
      count: 2,
      source: "explicit",
    });
  });

  it("run: a missing count, an id >= count and a rank that is not an integer are SchemaErrors saying what to do", () => {
    assert.throws(
      () => runRank({}, { JOB_COMPLETION_INDEX: "1" }),
      (e: unknown) => {
        return e instanceof SchemaError && /no writer count/.test(e.message) && /Indexed Job/.test(e.message);
      },
    );
    assert.throws(() => runRank({}, {}), /no writer id: start the process under mpirun/);
    assert.throws(
      () => runRank({}, { SLURM_PROCID: "4", SLURM_NTASKS: "4" }),
      (e: unknown) =>
        e instanceof SchemaError && /writer id 4 is not below the writer count 4/.test(e.message),
    );
    assert.throws(() => runRank({ id: 2, count: 2 }), SchemaError);
    assert.throws(() => runRank({}, { PMI_RANK: "1x", PMI_SIZE: "2" }), SchemaError);
    assert.throws(() => runRank({}, { PMI_RANK: "-1", PMI_SIZE: "2" }), SchemaError);
    assert.throws(() => runRank({ id: 0, count: 0 }), SchemaError);
  });
});

describe("StreamRun: the token exchange behind open/write/commit/close", { timeout: 60_000 }, () => {
  it("run: an owner and a contributor with commitEvery 5 commit rounds 1-3 (the last at close) and equal a single writer", async () => {
    const store = newStore();
    const events: RunEvent[] = [];
    const owner = await openRun(store, 0, { onEvent: (e) => events.push(e) });
    const contributor = await openRun(store, 1);
    await Promise.all(
      [owner, contributor].map(async (run) => {
        await writeRecords(run);
        await run.close();
      }),
    );
    assert.deepEqual(
      events.filter((e) => e.kind === "committed"),
      [
        { kind: "committed", round: 1, nCommitted: 5 },
        { kind: "committed", round: 2, nCommitted: 10 },
        { kind: "committed", round: 3, nCommitted: 12 },
      ],
    );
    assert.deepEqual(events[0], { kind: "opened", id: 0, count: 2, mode: "create", nextRecord: 0 });
    assert.deepEqual(await store.list("_tokens/"), []);
    assert.equal(await values(store), await singleWriterValues());
  });

  it("run: a contributor restarted after posting tokens for two rounds resumes at the committed state; its posts replace the stale ones", async () => {
    const store = newStore();
    const owner = await openRun(store, 0, { commitEvery: 0 });
    const first = await openRun(store, 1);
    // Rounds 1 and 2 posted (records 0-9) ahead of any commit; records 10 and 11 die with the process.
    await writeRecords(first, 12);
    const events: RunEvent[] = [];
    const again = await openRun(store, 1, { onEvent: (e) => events.push(e) });
    assert.deepEqual(events.at(-1), { kind: "opened", id: 1, count: 2, mode: "resume", nextRecord: 0 });
    await assert.rejects(writeRecords(first, 15), Fenced, "the first process's next round is Fenced");
    await Promise.all([
      (async () => {
        for (const [from, to] of [
          [0, 5],
          [5, 10],
          [10, 12],
        ] as const) {
          await writeRecords(owner, to, from);
          await owner.commit();
        }
        await owner.close();
      })(),
      (async () => {
        await writeRecords(again, 12);
        await again.close();
      })(),
    ]);
    assert.deepEqual(await store.list("_tokens/"), []);
    assert.equal(await values(store), await singleWriterValues());
  });

  it("run: an owner restarted after posting its token commits that round from the mailbox and goes on", async () => {
    const store = newStore();
    const first = await openRun(store, 0, { timeoutMs: 50 });
    await assert.rejects(writeRecords(first), (e: unknown) => {
      return e instanceof MailboxTimeout && /restart the missing writer with the same id/.test(e.message);
    });
    const contributor = await openRun(store, 1);
    await writeRecords(contributor, 5); // round 1 complete in the mailbox; nothing committed yet
    const events: RunEvent[] = [];
    const owner = await openRun(store, 0, { onEvent: (e) => events.push(e) });
    assert.deepEqual(events, [
      { kind: "committed", round: 1, nCommitted: 5 },
      { kind: "opened", id: 0, count: 2, mode: "resume", nextRecord: 5 },
    ]);
    await Promise.all(
      [owner, contributor].map(async (run) => {
        await writeRecords(run);
        await run.close();
      }),
    );
    assert.equal(await values(store), await singleWriterValues());
  });

  it("run: a contributor taken over between the owner's collection of its token and the commit: the commit is refused as stale and the round waits for the live handle", async () => {
    const store = newStore();
    let again: Promise<StreamRun> | undefined;
    let leaseReads = 0;
    // The owner reads writer 1's lease when it collects round 1 and again in its commit's check: the
    // restarted contributor takes the lease over in between.
    const racing = new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (prop !== "get" || typeof value !== "function")
          return typeof value === "function" ? value.bind(target) : value;
        return async (key: string) => {
          if (key === leaseKey(1) && ++leaseReads === 2) {
            // The restarted contributor's open goes on until the commit's outcome is known (it waits for
            // the owner's commit intent), so the owner goes on once the lease has changed hands.
            const before = await target.get(key);
            again = openRun(store, 1);
            while (Buffer.compare(Buffer.from((await target.get(key))!), Buffer.from(before!)) === 0)
              await new Promise((r) => setTimeout(r, 2));
          }
          return value.call(target, key);
        };
      },
    });
    const owner = await openRun(racing, 0);
    const first = await openRun(store, 1);
    await writeRecords(first, 5); // round 1 posted by the first process
    const ownerDone = (async () => {
      await writeRecords(owner, 12);
      await owner.close();
    })();
    while (again === undefined) await new Promise((r) => setTimeout(r, 5));
    const live = await again;
    assert.equal(live.nextRecord, 0, "nothing was committed: the live handle starts at record 0");
    await writeRecords(live);
    await live.close();
    await ownerDone;
    assert.ok(leaseReads > 2, "after the refused commit the owner collected round 1 again");
    assert.equal(await values(store), await singleWriterValues());
  });

  it("run: writer 0 deletes the tokens of committed rounds at open and keeps those of the open round", async () => {
    const store = newStore();
    const runs = [await openRun(store, 0), await openRun(store, 1)];
    await Promise.all(runs.map((run) => writeRecords(run, 10)));
    // What a writer 0 stopped between its commit of round 2 and clearing it leaves behind.
    const stale = new TextEncoder().encode("{}");
    await store.put("_tokens/2/1.json", stale);
    await store.put("_tokens/3/1.json", stale);
    await openRun(store, 0);
    assert.deepEqual(await store.list("_tokens/"), ["_tokens/3/1.json"]);
  });

  it("run: the owner's waits are reported with the missing writer ids", async () => {
    const store = newStore();
    const events: RunEvent[] = [];
    const owner = await openRun(store, 0, { reportEveryMs: 20, onEvent: (e) => events.push(e) });
    const done = writeRecords(owner, 5);
    await new Promise((r) => setTimeout(r, 150));
    const contributor = await openRun(store, 1);
    await writeRecords(contributor, 5);
    await done;
    const waits = events.filter((e) => e.kind === "waiting");
    assert.ok(waits.length >= 2, JSON.stringify(events));
    assert.deepEqual(waits[0], { ...waits[0], round: 1, missing: [1] });
    assert.deepEqual(events.at(-1), { kind: "committed", round: 1, nCommitted: 5 });
  });
});

describe("StreamRun: bad input is named before any committed byte changes", { timeout: 60_000 }, () => {
  it("run: a count that differs from the store's is a ProtocolError naming both, for owner and contributor", async () => {
    const store = newStore();
    const owner = await openRun(store, 0, { commitEvery: 0 });
    await writeRecords(owner, 3);
    const before = await bytesOf(store);
    for (const id of [0, 1]) {
      await assert.rejects(openRun(store, id, { count: 3 }), (e: unknown) => {
        return e instanceof ProtocolError && /created for 2 writers, this process says 3/.test(e.message);
      });
    }
    assert.deepEqual(await bytesOf(store), before);
  });

  it("run: an id >= count, an owner without schema and bad commitEvery are SchemaErrors before any I/O", async () => {
    const store = newStore();
    await assert.rejects(openRun(store, 2), SchemaError);
    await assert.rejects(openRun(store, 0, { schema: undefined }), /give it the schema/);
    await assert.rejects(openRun(store, 0, { commitEvery: -1 }), SchemaError);
    assert.deepEqual(await store.list(""), []);
  });

  it("run: a second process with the same id fences the first, whose next write is Fenced", async () => {
    const store = newStore();
    const owner = await openRun(store, 0, { commitEvery: 0 });
    const first = await openRun(store, 1, { commitEvery: 0 });
    await writeRecords(first, 2);
    const second = await openRun(store, 1, { commitEvery: 0 });
    assert.equal(second.nextRecord, 0);
    await writeRecords(second, 4);
    await assert.rejects(async () => {
      // Other values than the live handle's: identical bytes would be accepted as the same write.
      await writeRecords(first, 4, 2, 100);
      await first.commit();
    }, Fenced);
    await assert.rejects(first.commit(), Fenced, "a fenced handle refuses every further call");
    await writeRecords(owner, 4);
    await Promise.all([owner.commit(), second.commit()]);
    await Promise.all([owner.close(), second.close()]);
    assert.equal((JSON.parse(await committedDump(store)) as unknown[])[1], 4);
  });

  it("run: an unreachable endpoint is a StoreError saying what to check, and nothing is written", async () => {
    const store = new S3Store({
      endpoint: "http://127.0.0.1:9",
      region: "us-east-1",
      bucket: "zs-unreachable",
      credentials: { accessKeyId: "k", secretAccessKey: "s" },
      maxAttempts: 1,
    });
    await assert.rejects(openRun(store, 0), (e: unknown) => {
      return (
        e instanceof StoreError &&
        /cannot reach the store s3:\/\/zs-unreachable/.test(e.message) &&
        /AWS_ENDPOINT_URL_S3/.test(e.message)
      );
    });
  });
});

describe(
  "StreamRun: commit() that meets a failed store call is retried by calling it again",
  { timeout: 60_000 },
  () => {
    const tokenPost = (what: string, key: string) => what === "putIfAbsent" && key.startsWith("_tokens/");
    const manifestWrite = (what: string, key: string) =>
      what === "putIfVersion" && key === "output_manifest.json";
    for (const kind of ["fail", "lose-ack"] as const) {
      it(`run: a contributor's token post (${kind}): the retry posts the same token, and the run equals a single writer`, async () => {
        const store = newStore();
        const owner = await openRun(store, 0, { commitEvery: 0 });
        const faulty = new FaultStore(store);
        const c = await openRun(faulty, 1, { commitEvery: 0 });
        await Promise.all([writeRecords(owner, 6), writeRecords(c, 6)]);
        faulty.plan = { at: 0, kind, match: tokenPost };
        const ownerRound = owner.commit();
        await assert.rejects(c.commit(), InjectedFault);
        await c.commit();
        await ownerRound;
        await Promise.all([writeRecords(owner), writeRecords(c)]);
        await Promise.all([owner.close(), c.close()]);
        assert.equal(await values(store), await singleWriterValues());
      });

      it(`run: the owner's commit of a round (${kind}): the retry commits that round, and the run equals a single writer`, async () => {
        const store = newStore();
        const faulty = new FaultStore(store);
        const owner = await openRun(faulty, 0, { commitEvery: 0 });
        const c = await openRun(store, 1, { commitEvery: 0 });
        await Promise.all([writeRecords(owner, 6), writeRecords(c, 6)]);
        faulty.plan = { at: 0, kind, match: manifestWrite };
        await c.commit();
        await assert.rejects(owner.commit(), InjectedFault);
        // Retried by the same call, or (after a lost acknowledgement) finished by close.
        if (kind === "fail") await owner.commit();
        await Promise.all([writeRecords(owner), writeRecords(c)]);
        await Promise.all([owner.close(), c.close()]);
        assert.equal(await values(store), await singleWriterValues());
        assert.deepEqual(await store.list(RECEIPT_PREFIX), [], "every committed token's receipt is gone");
      });
    }

    it("run: the owner's clearing of a committed round fails: the retry clears what is left and goes on", async () => {
      const store = newStore();
      const faulty = new FaultStore(store);
      const owner = await openRun(faulty, 0, { commitEvery: 0, timeoutMs: 2_000 });
      const c = await openRun(store, 1, { commitEvery: 0 });
      await Promise.all([writeRecords(owner, 6), writeRecords(c, 6)]);
      // The round's first token is deleted, the second delete fails.
      let deletes = 0;
      faulty.plan = {
        at: 0,
        kind: "fail",
        match: (what, key) => what === "delete" && key.startsWith("_tokens/") && ++deletes === 2,
      };
      await c.commit();
      await assert.rejects(owner.commit(), InjectedFault);
      await owner.commit();
      assert.deepEqual(await store.list("_tokens/"), []);
      await Promise.all([writeRecords(owner), writeRecords(c)]);
      await Promise.all([owner.close(), c.close()]);
      assert.equal(await values(store), await singleWriterValues());
    });
  },
);

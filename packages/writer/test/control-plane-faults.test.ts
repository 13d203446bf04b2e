// A control-plane record fails after its manifest write landed (writer-decisions.md rule 20): the call
// that committed returns, the data reads back, and the WAL ends up holding every record once, in order.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ControlPlane } from "@zarr-stream/controlplane";
import { MANIFEST_KEY, readOutputManifest, readRecord } from "@zarr-stream/reader";
import { type OutputManifestV2, RunRecordIncomplete, type StreamSchema } from "@zarr-stream/spec";
import { MemoryStore, type Store } from "@zarr-stream/store";
import { type WriterOptions, ZarrStreamWriter } from "../src/index.js";
import { type FaultPlan, FaultStore, InjectedFault } from "./fault-store.js";
import { gridSchema, recordArrays } from "./helpers.js";
import { bits } from "./store-locations.js";

const OWNER = { kind: "owner", nWriters: 1 } as const;

function cpOptions(now?: () => number): WriterOptions {
  return {
    controlPlane: {
      product: "DEMO",
      runId: "run1",
      options: {
        ownerId: "a",
        claimHeartbeatIntervalS: 0,
        runHeartbeatIntervalS: 0,
        ...(now ? { now } : {}),
      },
    },
  };
}

/** The run's WAL as `event_type` or `event_type@commit_seq`, in order. */
async function wal(store: Store): Promise<string[]> {
  const plane = await ControlPlane.open(store, { product: "DEMO" });
  const runs = await plane.listRuns();
  await plane.close();
  assert.equal(runs.length, 1);
  return runs[0]!.events.map((e) => {
    const seq = (e.record as { meta?: { commit_seq?: number } } | undefined)?.meta?.commit_seq;
    return seq === undefined ? e.event_type : `${e.event_type}@${seq}`;
  });
}

/** Every record of `schema` committed in `store` reads back as the generator wrote it. */
async function assertReadsBack(store: Store, schema: StreamSchema, n: number): Promise<void> {
  assert.equal((await readOutputManifest(store)).n_records, n);
  for (let r = 0; r < n; r++) {
    for (const v of schema.vars) {
      const read = await readRecord(store, v.name, r);
      assert.equal(bits(read.data), bits(recordArrays(schema, r, {})[v.name]!), `record ${r} of ${v.name}`);
    }
  }
}

/** Writes record r and commits it; returns the receipt's commit_seq. */
async function commitRecord(w: ZarrStreamWriter, schema: StreamSchema, r: number): Promise<number> {
  await w.writeRecord(10 * (r + 1), recordArrays(schema, r, {}));
  const receipt = await w.commit([await w.flush()]);
  assert.equal(receipt.n_committed, r + 1, `commit of record ${r}`);
  return receipt.commit_seq;
}

async function closeSeq(w: ZarrStreamWriter): Promise<number> {
  return ((await w.close()) as OutputManifestV2).commit_seq;
}

const spans = (events: string[]) => events.filter((e) => e.startsWith("span_committed@"));
const spansOf = (seqs: number[]) => seqs.map((s) => `span_committed@${s}`);

/**
 * Closes `w`, which commits the owner's last token (one more span), and checks that the WAL holds the
 * spans of `seqs` and of close, each once and in order, then run_completed.
 */
async function closeWithSpans(w: ZarrStreamWriter, store: Store, seqs: number[]): Promise<void> {
  const all = [...seqs, await closeSeq(w)];
  const events = await wal(store);
  assert.deepEqual(spans(events), spansOf(all));
  assert.equal(events.at(-1), "run_completed");
}

describe("a control-plane record that fails after its commit landed", () => {
  const segmentFaults = [
    ["fail", "a failed WAL segment write: every commit returns, and the WAL holds each span once, in order"],
    [
      "lose-ack",
      "a WAL segment create that lost its acknowledgement: commits go on, each span recorded once",
    ],
  ] as const;
  for (const [kind, title] of segmentFaults) {
    it(title, async () => {
      const schema = gridSchema();
      const store = new FaultStore(new MemoryStore());
      const w = await ZarrStreamWriter.create(store, schema, OWNER, {}, cpOptions());
      // A span is buffered and written with its segment every 25 events: the first such write faults.
      const plan: FaultPlan = {
        at: 0,
        kind,
        match: (what, key) => what === "putIfAbsent" && /^\.firecube\/runs\/.*\/events-\d+\.jsonl$/.test(key),
      };
      store.plan = plan;
      const seqs: number[] = [];
      for (let r = 0; r < 30; r++) seqs.push(await commitRecord(w, schema, r));
      assert.equal(store.plan.match, undefined, "the segment write faulted");
      await assertReadsBack(store.inner, schema, 30);
      await closeWithSpans(w, store.inner, seqs);
    });
  }

  it("a failed run.json write: the commit returns, and the span is not recorded twice", async () => {
    const schema = gridSchema();
    const store = new FaultStore(new MemoryStore());
    let clock = 1_700_000_000;
    const w = await ZarrStreamWriter.create(
      store,
      schema,
      OWNER,
      {},
      cpOptions(() => clock),
    );
    const seqs = [await commitRecord(w, schema, 0)];
    // A second later the append rewrites run.json, which fails after the span is buffered.
    clock += 2;
    store.plan = {
      at: 0,
      kind: "fail",
      match: (what, key) => what === "put" && key.startsWith(".firecube/runs/") && key.endsWith("/run.json"),
    };
    seqs.push(await commitRecord(w, schema, 1));
    assert.equal(store.plan.match, undefined, "the run.json write failed");
    seqs.push(await commitRecord(w, schema, 2));
    await assertReadsBack(store.inner, schema, 3);
    await closeWithSpans(w, store.inner, seqs);
  });

  it("a commit whose manifest write lost its acknowledgement records its span once a retry finds it landed", async () => {
    const schema = gridSchema();
    const store = new FaultStore(new MemoryStore());
    const w = await ZarrStreamWriter.create(store, schema, OWNER, {}, cpOptions());
    const seqs = [await commitRecord(w, schema, 0)];
    await w.writeRecord(20, recordArrays(schema, 1, {}));
    const token = await w.flush();
    store.plan = {
      at: 0,
      kind: "lose-ack",
      match: (what, key) => what === "putIfVersion" && key === MANIFEST_KEY,
    };
    await assert.rejects(w.commit([token]), InjectedFault);
    const retried = await w.commit([token]);
    assert.equal(retried.n_committed, 2);
    seqs.push(retried.commit_seq);
    seqs.push(await commitRecord(w, schema, 2));
    await assertReadsBack(store.inner, schema, 3);
    await closeWithSpans(w, store.inner, seqs);
  });

  it("an invalidate whose projection read fails returns; close writes its record_replaced before completing", async () => {
    const schema = gridSchema({ time_mode: { indexed: { times: [10, 20, 30, 40] } } });
    const store = new FaultStore(new MemoryStore());
    const w = await ZarrStreamWriter.create(store, schema, OWNER, {}, cpOptions());
    for (const r of [0, 1]) await w.writeRecordAt(r, 10 * (r + 1), recordArrays(schema, r, {}));
    const committed = await w.commit([await w.flush()]);
    // The first control-plane call after the manifest write lands fails: the projection invalidate reads.
    let landed = false;
    store.plan = {
      at: 0,
      kind: "fail",
      match: (what, key) => {
        if (what === "putIfVersion" && key === MANIFEST_KEY) landed = true;
        return landed && key.startsWith(".firecube/");
      },
    };
    await w.invalidate([1]);
    assert.equal(store.plan.match, undefined, "a control-plane read failed");
    const m = (await readOutputManifest(store.inner)) as OutputManifestV2;
    assert.deepEqual(
      m.records!.entries.slice(0, 2).map((e) => e.committed),
      [true, false],
    );
    const read = await readRecord(store.inner, "temperature", 0);
    assert.equal(bits(read.data), bits(recordArrays(schema, 0, {}).temperature!));
    await w.close();
    const events = await wal(store.inner);
    const tail = events.filter((e) => e.startsWith("span_committed") || e.startsWith("record_replaced"));
    assert.deepEqual(tail.slice(0, 2), [
      `span_committed@${committed.commit_seq}`,
      `record_replaced@${committed.commit_seq + 1}`,
    ]);
    assert.equal(events.at(-1), "run_completed");
  });
});

/** A store on which every WAL segment create fails once `broken` is set. */
class BrokenWal extends FaultStore {
  broken = false;
  override putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    if (this.broken && /^\.firecube\/runs\/.*\/events-\d+\.jsonl$/.test(key))
      return Promise.reject(new InjectedFault(`injected: segment ${key} not written`, key));
    return super.putIfAbsent(key, bytes);
  }
}

describe("a close whose control-plane run end fails", () => {
  it("once: close retries the same run_completed and returns", async () => {
    const schema = gridSchema();
    const store = new FaultStore(new MemoryStore());
    const w = await ZarrStreamWriter.create(store, schema, OWNER, {}, cpOptions());
    const seqs = [await commitRecord(w, schema, 0)];
    store.plan = {
      at: 0,
      kind: "fail",
      match: (what, key) => what === "putIfAbsent" && /^\.firecube\/runs\/.*\/events-\d+\.jsonl$/.test(key),
    };
    await closeWithSpans(w, store.inner, seqs);
    assert.equal(store.plan.match, undefined, "the run end's segment write failed");
    const events = await wal(store.inner);
    assert.equal(events.filter((e) => e === "run_completed").length, 1);
  });

  it("for good: close throws RunRecordIncomplete carrying the manifest it committed; the run stays live", async () => {
    const schema = gridSchema();
    const store = new BrokenWal(new MemoryStore());
    const w = await ZarrStreamWriter.create(store, schema, OWNER, {}, cpOptions());
    await commitRecord(w, schema, 0);
    await w.writeRecord(20, recordArrays(schema, 1, {}));
    store.broken = true;
    const err = await w.close().then(
      () => assert.fail("close should report the run record"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof RunRecordIncomplete, String(err));
    const stored = await readOutputManifest(store.inner);
    assert.deepEqual(err.manifest, stored);
    assert.equal(stored.n_records, 2);
    await assertReadsBack(store.inner, schema, 2);
    const events = await wal(store.inner);
    assert.ok(!events.includes("run_completed"), events.join(" "));
  });
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { IntegralFloat } from "@zarr-stream/spec";
import fc from "fast-check";
import { ControlPlane, SnapshotRebuildRefused } from "../src/index.js";
import { COMPACT_LOCK_KEY, LATEST_KEY, snapshotKey, snapshotMetaKey } from "../src/layout.js";
import { manualClock, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;

async function setup() {
  const store = new TextMemoryStore();
  const clock = manualClock(T0);
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: clock,
    runHeartbeatIntervalS: 0,
    claimHeartbeatIntervalS: 0,
  });
  return { store, clock, cp };
}

type Cp = Awaited<ReturnType<typeof setup>>["cp"];

async function run(cp: Cp, id: string, records: object[], end: "complete" | "fail" | "live" = "complete") {
  await cp.startRun({ runId: id });
  for (const r of records) await cp.appendRecord(id, r as Record<string, unknown>);
  if (end === "complete") await cp.completeRun(id);
  else if (end === "fail") await cp.failRun(id, "boom");
  else await cp.flushRun(id);
}

const spans = (state: Map<string, Record<string, unknown>>) =>
  Object.fromEntries([...state].filter(([k]) => !k.startsWith("run_")).map(([k, v]) => [k, v.v ?? v.status]));

test("projection: complete runs by (completed_at, run_id), last record wins; failed and live runs contribute nothing", async () => {
  const { cp, clock } = await setup();
  clock.set(T0 + 10);
  await run(cp, "b", [{ key: "k", status: "active", v: "b" }]); // completes at T0+10
  clock.set(T0 + 5);
  await cp.startRun({ runId: "a" });
  await cp.appendRecord("a", { key: "k", status: "active", v: "a" });
  clock.set(T0 + 10);
  await cp.completeRun("a"); // same completed_at as b: run id breaks the tie, so b wins
  clock.set(T0 + 20);
  await run(cp, "c", [{ key: "k", status: "active", v: "c-failed" }], "fail");
  await run(
    cp,
    "d",
    [
      { key: "k", status: "active", v: "d-live" },
      { key: "j", status: "active", v: "d" },
    ],
    "live",
  );
  const { state, source } = await cp.project();
  assert.equal(source, "full-replay");
  assert.deepEqual(spans(state), { k: "b" });
  const hist = await cp.history();
  assert.deepEqual(
    hist.map((h) => [h.runId, h.state]),
    [
      ["a", "complete"],
      ["b", "complete"],
      ["c", "failed"],
      ["d", "live"],
    ],
  );
  assert.equal(hist.find((h) => h.runId === "c")!.error, "boom");
});

test("projection: replacement_committed marks listed keys replaced; a later marking wins, as in the reference", async () => {
  const { cp, clock } = await setup();
  await run(cp, "r1", [
    { key: "s1", status: "active" },
    { key: "s2", status: "active" },
  ]);
  clock.advance(5);
  await cp.startRun({ runId: "r2", replaces: ["r1"] });
  await cp.appendEvent("r2", "replacement_committed", {
    replacing_run_id: "r2",
    replaced_span_keys: ["s1", "nope"],
  });
  clock.advance(5);
  await cp.appendEvent("r2", "replacement_committed", { replacing_run_id: "r2", replaced_span_keys: ["s1"] });
  await cp.completeRun("r2");
  const { state } = await cp.project();
  // As the reference projects: schema_version and the event's time filled in, times as Python floats.
  assert.deepEqual(state.get("s1"), {
    key: "s1",
    status: "replaced",
    schema_version: "v2",
    timestamp: new IntegralFloat(T0),
    replaced_by: "r2",
    replaced_at: new IntegralFloat(T0 + 10),
  });
  assert.equal(state.get("s2")!.status, "active");
  assert.equal(state.has("nope"), false);
});

test("snapshots: rebuild writes sorted jsonl, meta and LATEST; read = snapshot + later runs equals full replay", async () => {
  const { cp, clock, store } = await setup();
  await run(cp, "r1", [
    { key: "z", status: "active" },
    { key: "a", status: "active" },
    { key: "m", status: "failed" },
  ]);
  clock.advance(10);
  const res = await cp.rebuildSnapshot();
  assert.ok(res.rebuilt);
  const body = store
    .text(snapshotKey(res.generation))!
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l).key);
  assert.deepEqual(body, ["a", "m", "run_r1", "z"]);
  const meta = JSON.parse(store.text(snapshotMetaKey(res.generation))!);
  assert.deepEqual(Object.keys(meta), [
    "schema_version",
    "generation",
    "completed_before",
    "created_at",
    "records",
    "product",
  ]);
  assert.equal(meta.records, 4);
  assert.equal(meta.generation, String(BigInt(T0 + 10) * 1000000000n));
  const latest = JSON.parse(store.text(LATEST_KEY)!);
  assert.equal(latest.generation, res.generation);
  assert.match(latest.snapshot_path, /snapshot-\d+\.jsonl$/);
  clock.advance(10);
  await run(cp, "r2", [{ key: "a", status: "active", v: 2 }]);
  await cp.startRun({ runId: "r3", replaces: ["r1"] });
  await cp.appendEvent("r3", "replacement_committed", { replacing_run_id: "r3", replaced_span_keys: ["z"] });
  await cp.completeRun("r3");
  const viaSnapshot = await cp.project();
  assert.equal(viaSnapshot.source, "snapshot");
  assert.deepEqual(viaSnapshot.state, await cp.replay());
});

test("snapshots: a missing or corrupt snapshot falls back to a full replay with the same result", async () => {
  const { cp, clock, store } = await setup();
  await run(cp, "r1", [{ key: "a", status: "active" }]);
  clock.advance(1);
  const res = await cp.rebuildSnapshot();
  assert.ok(res.rebuilt);
  const full = await cp.replay();
  const key = snapshotKey(res.generation);
  const good = store.text(key)!;
  for (const broken of [good.replace("}", ""), good.slice(0, -1), `${good}${good}`]) {
    store.setText(key, broken);
    const r = await cp.project();
    assert.equal(r.source, "full-replay", broken);
    assert.ok(r.fallbackReason);
    assert.deepEqual(r.state, full);
  }
  await store.delete(key);
  assert.match((await cp.project()).fallbackReason!, /is missing/);
  store.setText(LATEST_KEY, "{");
  assert.equal((await cp.project()).source, "full-replay");
});

test("snapshots: equivalence for random histories (property, snapshot taken at a random point)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.array(fc.tuple(fc.constantFrom("a", "b", "c", "d"), fc.constantFrom("active", "failed", "noop")), {
          maxLength: 4,
        }),
        { minLength: 1, maxLength: 5 },
      ),
      fc.nat(5),
      fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
      async (runs, cut, replaces) => {
        const { cp, clock } = await setup();
        for (const [i, recs] of runs.entries()) {
          if (i === cut) {
            clock.advance(1);
            await cp.rebuildSnapshot();
          }
          clock.advance(1);
          await cp.startRun({ runId: `r${i}` });
          for (const [k, status] of recs) await cp.appendRecord(`r${i}`, { key: k, status, i });
          if (replaces[i])
            await cp.appendEvent(`r${i}`, "replacement_committed", {
              replacing_run_id: `r${i}`,
              replaced_span_keys: ["a", "b"],
            });
          await cp.completeRun(`r${i}`);
        }
        const viaRead = await cp.project();
        assert.deepEqual(viaRead.state, await cp.replay());
      },
    ),
    { numRuns: 40 },
  );
});

test("snapshots: rebuild refused while a claim exists or a live or orphaned run exists", async () => {
  const { cp, store } = await setup();
  await cp.acquireClaim("zarr_append:g");
  await assert.rejects(
    cp.rebuildSnapshot(),
    (e: unknown) =>
      e instanceof SnapshotRebuildRefused &&
      e.reason === "blocking-claims" &&
      /blocking claims exist: demo:zarr_append:g/.test(e.message),
  );
  await cp.releaseClaim("zarr_append:g");
  await run(cp, "live1", [], "live");
  await assert.rejects(cp.rebuildSnapshot(), { name: "SnapshotRebuildRefused", reason: "live-runs" });
  await cp.abandonRun("live1", { force: true });
  store.setText(
    ".firecube/runs/orph/events-00000.jsonl",
    `{"schema_version":"v2","event_id":"orph:00000:000000","event_type":"run_started","product":"demo","run_id":"orph","timestamp":1.0,"record":{}}\n`,
  );
  await assert.rejects(
    cp.rebuildSnapshot(),
    (e: unknown) => e instanceof SnapshotRebuildRefused && e.blockers[0] === "orph (missing_run_meta)",
  );
  assert.equal(await store.get(COMPACT_LOCK_KEY), undefined, "the lock is released after a refusal");
});

test("snapshots: a fresh compact.lock skips the rebuild; a stale one is recovered", async () => {
  const { cp, clock, store } = await setup();
  store.setText(COMPACT_LOCK_KEY, JSON.stringify({ owner_id: "crashed", acquired_at: T0 }));
  clock.set(T0 + 600);
  assert.deepEqual(await cp.rebuildSnapshot(), { rebuilt: false, reason: "locked", holder: "crashed" });
  clock.set(T0 + 600.5);
  const res = await cp.rebuildSnapshot();
  assert.equal(res.rebuilt, true);
  assert.equal(await store.get(COMPACT_LOCK_KEY), undefined);
});

test("snapshots: garbage collection keeps the newest K generations", async () => {
  const { cp, clock, store } = await setup();
  const gens: string[] = [];
  for (let i = 0; i < 5; i++) {
    clock.advance(1);
    const r = await cp.rebuildSnapshot({ keep: 2 });
    assert.ok(r.rebuilt);
    gens.push(r.generation);
  }
  const left = (await store.list(".firecube/snapshots/")).map((k) => k.split("/").pop());
  assert.deepEqual(
    left,
    gens.slice(-2).flatMap((g) => [`snapshot-${g}.jsonl`, `snapshot-${g}.meta.json`]),
  );
  assert.equal((await cp.snapshotStatus()).generations.length, 2);
});

test("snapshots: the read path does not read the segments of runs folded into the snapshot", async () => {
  const { cp, clock, store } = await setup();
  for (let i = 0; i < 3; i++) await run(cp, `old${i}`, [{ key: `k${i}`, status: "active" }]);
  await run(cp, "failed", [{ key: "f", status: "active" }], "fail");
  clock.advance(1);
  assert.ok((await cp.rebuildSnapshot()).rebuilt);
  clock.advance(1);
  await run(cp, "new", [{ key: "k0", status: "active", v: "new" }]);
  const read: string[] = [];
  const realGet = store.get.bind(store);
  store.get = async (key: string) => {
    if (key.includes("/events-")) read.push(key.split("/")[2]!);
    return realGet(key);
  };
  const r = await cp.project();
  store.get = realGet;
  assert.equal(r.source, "snapshot");
  assert.deepEqual([...new Set(read)], ["new"]);
  assert.equal(r.state.get("k0")!.v, "new");
  assert.deepEqual(r.state, await cp.replay());
});

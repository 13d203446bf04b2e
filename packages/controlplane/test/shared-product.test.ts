// A product the reference (firecube 0.1.7) shares with us: run state, snapshot cutoffs, compact.lock,
// recovery and per-document schema_version rules, on documents shaped as the reference writes them.
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { FsStore } from "@zarr-stream/store";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { ControlPlane, ControlPlaneCorrupt, ManifestError, runControlPlaneCli } from "../src/index.js";
import {
  CLAIMS_PREFIX,
  COMPACT_LOCK_KEY,
  INDEX_KEY,
  LATEST_KEY,
  RUNS_PREFIX,
  runRecordKey,
  SCHEMA_KEY,
  SLOT_INDEX_KEY,
  segmentKey,
  snapshotMetaKey,
} from "../src/layout.js";
import { manualClock, manualObserver, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;
const roots = tempRoots("cp-shared");

function ev(run: string, part: number, idx: number, type: string, record: object, ts: number) {
  return JSON.stringify({
    schema_version: "v2",
    event_id: `${run}:${String(part).padStart(5, "0")}:${String(idx).padStart(6, "0")}`,
    event_type: type,
    product: "demo",
    run_id: run,
    timestamp: ts,
    record,
  });
}

/** run.json as the reference's RunEventWriter writes it (completed_at only once terminal). */
function runJson(run: string, status: string, at: number, extra: object = {}) {
  const doc: Record<string, unknown> = {
    schema_version: "v2",
    product: "demo",
    run_id: run,
    status,
    parts: 1,
    events: 2,
    started_at: at,
    updated_at: at,
    run_uri: `memory://x/.firecube/runs/${run}`,
    run_stale_threshold_s: 3600,
    ...extra,
  };
  if (["complete", "failed", "abandoned"].includes(status) && !("completed_at" in extra))
    doc.completed_at = at;
  return JSON.stringify(doc);
}

/** A maintenance run as the reference's record_maintenance_started/completed|failed leaves it. */
function maintenanceRun(store: TextMemoryStore, run: string, status: "complete" | "failed", at: number) {
  const record = (s: string) => ({
    key: `run_${run}`,
    type: "run",
    size: 0,
    timestamp: at,
    status: s,
    meta: { op: "delete", kind: "maintenance", run_id: run },
    maintenance: { op: "delete", kind: "maintenance", scope: {} },
    schema_version: "v2",
  });
  store.setText(segmentKey(run, 0), `${ev(run, 0, 0, "maintenance_started", record("started"), at)}\n`);
  const end = status === "complete" ? "maintenance_completed" : "maintenance_failed";
  store.setText(segmentKey(run, 1), `${ev(run, 1, 0, end, record(status), at)}\n`);
  store.setText(runRecordKey(run), runJson(run, status, at, status === "failed" ? { error: "boom" } : {}));
}

/** The reference's time-coordinate consolidation run: no run_* event, run.json complete. */
function consolidationRun(store: TextMemoryStore, at: number) {
  const run = "time-coord-consolidation";
  const record = {
    kind: "consolidated_time_coord",
    run_id: run,
    timestamp_iso: "2024-08-18T16:53:20Z",
    groups: ["g"],
  };
  store.setText(segmentKey(run, 0), `${ev(run, 0, 0, "consolidated_time_coord", record, at)}\n`);
  store.setText(runRecordKey(run), runJson(run, "complete", at));
}

function harness(store = new TextMemoryStore()) {
  const clock = manualClock(T0);
  const open = (ownerId = "op") =>
    ControlPlane.open(store, {
      product: "demo",
      now: clock,
      ownerId,
      runHeartbeatIntervalS: 0,
      claimHeartbeatIntervalS: 0,
      observer: manualObserver(clock),
    });
  let out = "";
  const cli = async (...argv: string[]) => {
    out = "";
    const code = await runControlPlaneCli(["--store", "/p", "--product", "demo", ...argv], {
      out: (t) => {
        out += t;
      },
      err: (t) => {
        out += t;
      },
      openStore: () => store,
      now: clock,
      observer: manualObserver(clock),
    });
    return { code, out, json: () => JSON.parse(out) };
  };
  return { store, clock, open, cli };
}

test("run state: maintenance runs and time-coordinate consolidations end by their run.json; recover leaves them, the snapshot folds them in", async () => {
  const { store, clock, open, cli } = harness();
  maintenanceRun(store, "maintenance-ok", "complete", T0);
  maintenanceRun(store, "maintenance-bad", "failed", T0 + 1);
  consolidationRun(store, T0 + 2);
  const cp = await open();
  const views = await cp.listRuns();
  assert.deepEqual(
    views.map((v) => [v.runId, v.state, v.completedAt, v.recordLags ?? false]),
    [
      ["maintenance-bad", "failed", T0 + 1, false],
      ["maintenance-ok", "complete", T0, false],
      ["time-coord-consolidation", "complete", T0 + 2, false],
    ],
  );
  clock.set(T0 + 100_000); // far past every threshold: nothing here is live, so nothing is stale
  assert.ok((await cp.listRuns()).every((v) => !v.stale));
  const r = await cli("recover", "--json");
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(r.json().abandoned, []);
  assert.equal(r.json().snapshot.rebuilt, true);
  assert.match(store.text(runRecordKey("maintenance-ok"))!, /"status":"complete"/);
  const { state, source } = await cp.project();
  assert.equal(source, "snapshot");
  // As the reference projects: the maintenance record of the complete run, nothing of the failed one.
  assert.deepEqual([...state.keys()], ["run_maintenance-ok"]);
  assert.equal(state.get("run_maintenance-ok")!.status, "complete");
});

test("run state: a terminal run.json without completed_at orders first (the reference reads it as 0)", async () => {
  const { store, open } = harness();
  const rec = (v: string) => ({ key: "k", status: "active", v, schema_version: "v2" });
  store.setText(segmentKey("a", 0), `${ev("a", 0, 0, "record_upsert", rec("a"), T0)}\n`);
  store.setText(runRecordKey("a"), runJson("a", "complete", T0));
  store.setText(segmentKey("b", 0), `${ev("b", 0, 0, "record_upsert", rec("b"), T0 + 5)}\n`);
  store.setText(runRecordKey("b"), runJson("b", "complete", T0 + 5, { completed_at: null }));
  const cp = await open();
  const b = (await cp.listRuns()).find((v) => v.runId === "b")!;
  assert.equal(b.completedAt, 0);
  assert.equal((await cp.replay()).get("k")!.v, "a", "a completed after b's 0, so a's record wins");
});

test("run state: a run whose WAL ended it but whose run.json lags is terminal; recover writes its run.json", async () => {
  const { store, clock, open, cli } = harness();
  const w = await open("w");
  await w.startRun({ runId: "r" });
  await w.appendRecord("r", { key: "k", status: "active" });
  const started = store.text(runRecordKey("r"))!;
  clock.advance(3);
  await w.completeRun("r");
  store.setText(runRecordKey("r"), started); // killed after its last segment, before its last run.json
  const cp = await open();
  const [view] = await cp.listRuns();
  assert.deepEqual([view!.state, view!.recordLags, view!.completedAt], ["complete", true, T0 + 3]);
  assert.match((await cli("runs", "list")).out, /r\tcomplete\t3 events/);
  const r = await cli("recover", "--json");
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(r.json().repaired, ["r"]);
  const doc = JSON.parse(store.text(runRecordKey("r"))!);
  assert.deepEqual([doc.status, doc.completed_at, doc.events, doc.parts], ["complete", T0 + 3, 3, 2]);
  assert.equal((await cp.listRuns())[0]!.recordLags, undefined);
});

test("abandon never rewrites a run whose run.json turned terminal while it was being abandoned", async () => {
  const { store, clock, open } = harness();
  const w = await open("w");
  await w.startRun({ runId: "r" });
  await w.appendRecord("r", { key: "k", status: "active" });
  await w.flushRun("r");
  clock.advance(4000);
  const op = await open();
  // The writer (a reference process, whose writes are unconditional) finishes just as our segment lands.
  const putIfAbsent = store.putIfAbsent.bind(store);
  store.putIfAbsent = async (key, bytes) => {
    const made = await putIfAbsent(key, bytes);
    if (key === segmentKey("r", 2)) store.setText(runRecordKey("r"), runJson("r", "complete", T0 + 4000));
    return made;
  };
  await assert.rejects(op.abandonRun("r", { reason: "x" }), /became complete while being abandoned/);
  store.putIfAbsent = putIfAbsent;
  assert.match(store.text(runRecordKey("r"))!, /"status":"complete"/);
  const [view] = await op.listRuns();
  assert.equal(view!.state, "complete", "run.json decides, for us as for the reference");
  // A run.json already terminal is refused before anything is written.
  store.setText(segmentKey("q", 0), `${ev("q", 0, 0, "run_started", {}, T0)}\n`);
  store.setText(runRecordKey("q"), runJson("q", "started", T0));
  const read = store.getVersioned!.bind(store);
  store.getVersioned = async (key) => {
    if (key === runRecordKey("q")) store.setText(key, runJson("q", "failed", T0 + 4000));
    return read(key);
  };
  await assert.rejects(op.abandonRun("q", { reason: "x" }), /already failed/);
  store.getVersioned = read;
  assert.deepEqual(await store.list(`${RUNS_PREFIX}q/`), [segmentKey("q", 0), runRecordKey("q")]);
});

test("rebuild: the cutoff is read before the runs are listed, so a run completing meanwhile is replayed, not lost", async () => {
  const { store, clock, open } = harness();
  const w = await open("w");
  const cp = await open();
  await w.startRun({ runId: "a" });
  await w.appendRecord("a", { key: "ka", status: "active" });
  await w.completeRun("a");
  clock.advance(1);
  const list = store.list.bind(store);
  let raced = false;
  store.list = async (prefix) => {
    const keys = await list(prefix);
    if (prefix === RUNS_PREFIX && !raced) {
      // Another process starts and completes a run right after our listing.
      raced = true;
      clock.advance(1);
      await w.startRun({ runId: "b" });
      await w.appendRecord("b", { key: "kb", status: "active" });
      await w.completeRun("b");
      clock.advance(1);
    }
    return keys;
  };
  const res = await cp.rebuildSnapshot();
  store.list = list;
  assert.ok(res.rebuilt);
  assert.equal(res.completedBefore, T0 + 1);
  assert.equal(res.records, 2, "run a and its record");
  const { state, source } = await cp.project();
  assert.equal(source, "snapshot");
  assert.ok(state.has("kb"), "run b completed after the cutoff and is replayed");
  assert.deepEqual(state, await cp.replay());
});

test("compact.lock: the reference's format (token, created_at) is honoured; ours carries it too", async () => {
  const { store, clock, open } = harness();
  const cp = await open();
  store.setText(COMPACT_LOCK_KEY, JSON.stringify({ token: "f00d", created_at: T0 }));
  clock.set(T0 + 1);
  assert.deepEqual(await cp.rebuildSnapshot(), { rebuilt: false, reason: "locked", holder: "token f00d" });
  assert.match(store.text(COMPACT_LOCK_KEY)!, /f00d/, "a fresh lock of the reference is left alone");
  clock.set(T0 + 600.5); // older than compactLockStaleS (600 s): a crashed rebuild's, recovered
  assert.equal((await cp.rebuildSnapshot()).rebuilt, true);
  // A lock that says nothing of its age is held, on a store without file times.
  store.setText(COMPACT_LOCK_KEY, JSON.stringify({ token: "beef" }));
  clock.set(T0 + 100_000);
  assert.equal((await cp.rebuildSnapshot()).rebuilt, false);
  await store.delete(COMPACT_LOCK_KEY);
  let written: Record<string, unknown> | undefined;
  const putIfAbsent = store.putIfAbsent.bind(store);
  store.putIfAbsent = async (key, bytes) => {
    if (key === COMPACT_LOCK_KEY) written = JSON.parse(new TextDecoder().decode(bytes));
    return putIfAbsent(key, bytes);
  };
  assert.equal((await cp.rebuildSnapshot()).rebuilt, true);
  assert.deepEqual(Object.keys(written!), ["token", "created_at", "owner_id", "acquired_at"]);
  assert.equal(written!.created_at, T0 + 100_000);
  assert.equal(await store.get(COMPACT_LOCK_KEY), undefined, "released");
});

test("one corrupt run: runs list and recover still work for the product; projecting a corrupt complete run is refused", async () => {
  const { store, clock, open, cli } = harness();
  const w = await open("w");
  await w.startRun({ runId: "good" });
  await w.appendRecord("good", { key: "g", status: "active" });
  await w.completeRun("good");
  store.setText(runRecordKey("bad-live"), runJson("bad-live", "started", T0));
  store.setText(segmentKey("bad-live", 0), `${ev("bad-live", 0, 0, "run_started", {}, T0)}\n{"broken\n`);
  const cp = await open();
  let views = await cp.listRuns();
  assert.deepEqual(
    views.map((v) => [v.runId, v.state, v.corrupt?.line]),
    [
      ["bad-live", "live", 2],
      ["good", "complete", undefined],
    ],
  );
  const list = await cli("runs", "list");
  assert.equal(list.code, 0);
  assert.match(list.out, /bad-live\tlive\t0 events\tcorrupt: .*events-00000\.jsonl:2: malformed/);
  assert.ok(
    (await cp.replay()).has("g"),
    "a corrupt live run is not projected, so it does not stop projection",
  );
  clock.advance(4000);
  const r = await cli("recover", "--json");
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(r.json().abandoned, ["bad-live"]);
  assert.equal(r.json().corrupt_runs.length, 1, "still reported");
  views = await cp.listRuns();
  assert.deepEqual(
    views.map((v) => v.state),
    ["abandoned", "complete"],
  );
  assert.equal(JSON.parse(store.text(runRecordKey("bad-live"))!).events, 3);
  // A corrupt complete run cannot be projected: its records are unknown.
  store.setText(runRecordKey("bad-done"), runJson("bad-done", "complete", T0 + 4000));
  store.setText(segmentKey("bad-done", 0), `{"broken\n`);
  assert.equal((await cli("runs", "list")).code, 0);
  await assert.rejects(cp.replay(), ControlPlaneCorrupt);
  clock.advance(1); // completed before the cutoff: the rebuild must fold it in
  await assert.rejects(cp.rebuildSnapshot(), ControlPlaneCorrupt);
  const again = await cli("recover", "--json");
  assert.equal(again.code, 1);
  assert.match(again.json().snapshot, /refused: .*bad-done.*malformed/);
});

test("schema_version, decided per document (decisions.md): each rule as it acts", async () => {
  const { store, clock, open } = harness();
  const w = await open("w");
  await w.startRun({ runId: "ok" });
  await w.appendRecord("ok", { key: "k", status: "active" });
  await w.completeRun("ok");
  clock.advance(1);
  assert.ok((await w.rebuildSnapshot()).rebuilt);
  const cp = await open();

  // schema.json: not v2 / chunkmanager-v2 -> nothing opens the control plane (the reference does not check).
  const schema = store.text(SCHEMA_KEY)!;
  store.setText(SCHEMA_KEY, schema.replace('"v2"', '"v3"'));
  await assert.rejects(open(), ControlPlaneCorrupt);
  store.setText(SCHEMA_KEY, schema);

  // LATEST.json and snapshot meta: not v2 -> the snapshot is not used, a full WAL replay answers (the
  // reference raises ControlPlaneCorruptionError).
  const latest = store.text(LATEST_KEY)!;
  store.setText(LATEST_KEY, latest.replace('"schema_version":"v2"', '"schema_version":"v3"'));
  let read = await cp.project();
  assert.deepEqual(
    [read.source, read.fallbackReason],
    ["full-replay", `${LATEST_KEY}: bad schema_version or generation`],
  );
  store.setText(LATEST_KEY, latest);
  const gen = JSON.parse(latest).generation as string;
  const meta = store.text(snapshotMetaKey(gen))!;
  store.setText(snapshotMetaKey(gen), meta.replace('"schema_version":"v2"', '"schema_version":"v3"'));
  read = await cp.project();
  assert.equal(read.source, "full-replay");
  assert.ok(read.state.has("k"));
  store.setText(snapshotMetaKey(gen), meta);

  // run.json: not v2 -> unreadable_run_meta, an orphan (the reference reads it regardless).
  store.setText(runRecordKey("v3"), runJson("v3", "complete", T0).replace('"v2"', '"v3"'));
  store.setText(segmentKey("v3", 0), `${ev("v3", 0, 0, "run_started", {}, T0)}\n`);
  const v3 = (await cp.listRuns()).find((v) => v.runId === "v3")!;
  assert.deepEqual([v3.state, v3.orphanReason], ["orphaned", "unreadable_run_meta"]);
  await store.delete(runRecordKey("v3"));
  await store.delete(segmentKey("v3", 0));

  // WAL event envelope: not v2 -> that run is corrupt (both tools).
  store.setText(runRecordKey("ev3"), runJson("ev3", "started", T0));
  store.setText(segmentKey("ev3", 0), `${ev("ev3", 0, 0, "run_started", {}, T0).replace('"v2"', '"v3"')}\n`);
  assert.match((await cp.listRuns()).find((v) => v.runId === "ev3")!.corrupt!.message, /schema_version "v3"/);
  await store.delete(runRecordKey("ev3"));
  await store.delete(segmentKey("ev3", 0));

  // A WAL record: not v2 -> projecting its complete run is corrupt (both tools); a failed run's is not read.
  const rec3 = { key: "x", status: "active", schema_version: "v3" };
  store.setText(runRecordKey("rec3"), runJson("rec3", "failed", T0));
  store.setText(segmentKey("rec3", 0), `${ev("rec3", 0, 0, "record_upsert", rec3, T0)}\n`);
  assert.ok((await cp.replay()).has("k"));
  store.setText(runRecordKey("rec3"), runJson("rec3", "complete", T0));
  await assert.rejects(cp.replay(), /event rec3:00000:000000: record schema_version "v3" is not "v2"/);
  await store.delete(runRecordKey("rec3"));
  await store.delete(segmentKey("rec3", 0));

  // index/current.json: not v1 -> ManifestError, precedence row 6 (both tools).
  store.setText(
    INDEX_KEY,
    JSON.stringify({ schema_version: "v3", identity_hash: "0".repeat(64), index: {} }),
  );
  await assert.rejects(
    cp.verifyResolvedIndex(),
    (e: unknown) => e instanceof ManifestError && e.reason === "unsupported-schema-version",
  );
  await store.delete(INDEX_KEY);

  // slot_index/current.json: not v1 -> ManifestError as for the index record (the reference does not check).
  store.setText(
    SLOT_INDEX_KEY,
    JSON.stringify({ schema_version: "v3", identity_hash: "0".repeat(64), model: {} }),
  );
  const runId = await cp.startRun({ runId: "slot" });
  await assert.rejects(
    cp.ensureSlotIndexModel(
      {
        name: "m",
        epoch: "2026-01-01T00:00:00Z",
        time_unit: null,
        groups: { g: { cadence_s: 60, mode: "exact" } },
      },
      { runId },
    ),
    (e: unknown) => e instanceof ManifestError && e.reason === "unsupported-schema-version",
  );
});

test("FsStore: claims, run segments and run.json are staged outside the directories the reference lists", async () => {
  const root = roots.fresh();
  const cp = await ControlPlane.open(new FsStore(root), {
    product: "demo",
    runHeartbeatIntervalS: 0,
    claimHeartbeatIntervalS: 0,
  });
  await cp.acquireClaim("zarr_append:data");
  await cp.heartbeat("zarr_append:data");
  const runId = await cp.startRun({ runId: "r" });
  await cp.appendRecord(runId, { key: "k", status: "active" });
  await cp.completeRun(runId);
  const claims = await readdir(join(root, CLAIMS_PREFIX));
  assert.equal(claims.length, 1);
  assert.match(claims[0]!, /^[0-9a-f]{64}\.json$/);
  assert.deepEqual((await readdir(join(root, RUNS_PREFIX, "r"))).sort(), [
    "events-00000.jsonl",
    "events-00001.jsonl",
    "run.json",
  ]);
  assert.deepEqual(await readdir(join(root, ".firecube", ".zs-tmp-staging")), []);
  await cp.releaseClaim("zarr_append:data");
});

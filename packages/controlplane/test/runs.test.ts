import assert from "node:assert/strict";
import { test } from "node:test";
import { ControlPlane } from "../src/index.js";
import { segmentKey } from "../src/layout.js";
import { manualClock, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;

async function setup() {
  const store = new TextMemoryStore();
  const clock = manualClock(T0);
  const open = (ownerId: string) =>
    ControlPlane.open(store, {
      product: "demo",
      now: clock,
      ownerId,
      runHeartbeatIntervalS: 0,
      claimHeartbeatIntervalS: 0,
    });
  return { store, clock, open };
}

test("abandon: a fresh run is refused without force; a stale one gets a run_abandoned segment and run.json", async () => {
  const { store, clock, open } = await setup();
  const writer = await open("w");
  await writer.startRun({ runId: "r" });
  await writer.appendRecord("r", { key: "a", status: "active" });
  await writer.flushRun("r");
  const operator = await open("op");
  await assert.rejects(operator.abandonRun("r"), /not stale \(last heartbeat 0\.0 s ago, threshold 3600 s\)/);
  clock.advance(3600);
  await assert.rejects(
    operator.abandonRun("r"),
    { name: "ProtocolError" },
    "exactly the threshold is not stale",
  );
  clock.advance(0.5);
  const id = await operator.abandonRun("r", { reason: "host lost" });
  assert.equal(id, "r:00002:000000");
  const run = JSON.parse(store.text(".firecube/runs/r/run.json")!);
  assert.deepEqual(
    [run.status, run.error, run.parts, run.events, run.completed_at],
    ["abandoned", "host lost", 3, 3, T0 + 3600.5],
  );
  const [view] = await operator.listRuns();
  assert.equal(view!.state, "abandoned");
  await assert.rejects(operator.abandonRun("r"), /already abandoned/);
  // The crashed writer, if it comes back, cannot write over the abandon segment.
  await assert.rejects(writer.appendEvent("r", "maintenance_started", {}), /already exists/);
});

test("abandon: an orphan (segments, no run.json) becomes an abandoned run with a run.json", async () => {
  const { store, clock, open } = await setup();
  store.setText(
    segmentKey("o", 0),
    `{"schema_version":"v2","event_id":"o:00000:000000","event_type":"run_started","product":"demo","run_id":"o","timestamp":${T0},"record":{}}\n{"torn`,
  );
  clock.advance(4000);
  const cp = await open("op");
  const [before] = await cp.listRuns();
  assert.deepEqual(
    [before!.state, before!.orphanReason, before!.stale],
    ["orphaned", "missing_run_meta", true],
  );
  await cp.abandonRun("o", { reason: "orphan" });
  const [after] = await cp.listRuns();
  assert.equal(after!.state, "abandoned");
  assert.equal(after!.orphanReason, undefined);
  assert.equal(after!.tornTail, undefined, "abandoning seals the torn segment first");
  assert.match(store.text(segmentKey("o", 0))!, /"run_started".*\n$/);
  await cp.rebuildSnapshot();
});

test("completeRun and failRun are terminal: later appends are refused and the run leaves the live set", async () => {
  const { open } = await setup();
  const cp = await open("w");
  await cp.startRun({ runId: "a" });
  await cp.failRun("a", "disk full");
  await assert.rejects(cp.appendEvent("a", "span_committed", {}), { name: "ProtocolError" });
  const [a] = await cp.listRuns();
  assert.equal(a!.state, "failed");
  assert.equal(a!.stale, false);
  assert.equal(a!.record?.error, "disk full");
  await assert.rejects(cp.startRun({ runId: "a" }), /already exists/);
});

test("abandon keeps keys a peer added to run.json within v2", async () => {
  const { store, clock, open } = await setup();
  const cp = await open("op");
  store.setText(
    ".firecube/runs/p/run.json",
    `{"schema_version":"v2","product":"demo","run_id":"p","status":"started","parts":0,"events":0,"started_at":${T0},"updated_at":${T0},"run_uri":"x","run_stale_threshold_s":10,"timestamps_skipped":4}`,
  );
  clock.advance(11);
  await cp.abandonRun("p");
  const run = JSON.parse(store.text(".firecube/runs/p/run.json")!);
  assert.equal(run.timestamps_skipped, 4);
  assert.equal(run.status, "abandoned");
  assert.deepEqual(Object.keys(run).slice(0, 4), ["schema_version", "product", "run_id", "status"]);
});

test("resume after a crash left a torn tail: the segment is sealed, appends follow, everything still reads", async () => {
  const { store, clock, open } = await setup();
  const first = await open("w");
  await first.startRun({ runId: "r" });
  await first.appendRecord("r", { key: "a", status: "active" });
  await first.flushRun("r");
  // The crash: a half-written line at the end of the last segment, as a non-atomic segment write leaves.
  const last = segmentKey("r", 1);
  store.setText(last, `${store.text(last)}{"schema_version":"v2","event_id":"r:00001:0000`);
  clock.advance(10);
  const again = await open("w");
  const resumed = await again.resumeRun("r");
  assert.equal(resumed.tornTail?.file, last);
  assert.ok(store.text(last)!.endsWith("\n"), "the torn segment is sealed before anything is appended");
  await again.appendRecord("r", { key: "b", status: "active" });
  await again.completeRun("r");

  const op = await open("op");
  const [view] = await op.listRuns();
  assert.equal(view!.state, "complete");
  assert.equal(view!.tornTail, undefined);
  assert.deepEqual([...(await op.replay()).keys()].sort(), ["a", "b", "run_r"]);
  const rebuilt = await op.rebuildSnapshot();
  assert.equal(rebuilt.rebuilt, true);
  assert.deepEqual([...(await op.project()).state.keys()].sort(), ["a", "b", "run_r"]);
});

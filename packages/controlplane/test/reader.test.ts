import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FsStore } from "@zarr-stream/store";
import { ControlPlane, ControlPlaneCorrupt } from "../src/index.js";
import { segmentKey } from "../src/layout.js";
import { manualClock, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;

function ev(run: string, part: number, idx: number, type: string, record: object = {}, ts = T0) {
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

function runJson(run: string, status = "started", updated = T0) {
  return JSON.stringify({
    schema_version: "v2",
    product: "demo",
    run_id: run,
    status,
    parts: 1,
    events: 1,
    started_at: T0,
    updated_at: updated,
    run_uri: `memory://x/.firecube/runs/${run}`,
    run_stale_threshold_s: 3600,
  });
}

async function runs(store: TextMemoryStore, clock = manualClock(T0 + 10)) {
  const cp = await ControlPlane.open(store, { product: "demo", now: clock, runHeartbeatIntervalS: 0 });
  return cp.listRuns();
}

/** The corruption of run "a": listing the product still works, the run carries what is wrong with it. */
async function corrupt(store: TextMemoryStore): Promise<ControlPlaneCorrupt> {
  const view = (await runs(store)).find((r) => r.runId === "a");
  assert.ok(view?.corrupt instanceof ControlPlaneCorrupt, "expected ControlPlaneCorrupt");
  assert.deepEqual(view.events, []);
  return view.corrupt;
}

test("torn tail: unterminated unparseable last line of a live run's last segment is dropped", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a"));
  s.setText(
    segmentKey("a", 0),
    `${ev("a", 0, 0, "run_started")}\n${ev("a", 0, 1, "span_committed", { key: "k" })}\n{"schema_ver`,
  );
  const [a] = await runs(s);
  assert.equal(a!.state, "live");
  assert.equal(a!.events.length, 2);
  assert.deepEqual(a!.tornTail, { file: segmentKey("a", 0), line: 3 });
});

test("torn tail: accepted in an earlier segment when every later event is terminal (abandon after crash)", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a", "abandoned"));
  s.setText(segmentKey("a", 0), `${ev("a", 0, 0, "run_started")}\n{"torn`);
  s.setText(segmentKey("a", 1), `${ev("a", 1, 0, "run_abandoned")}\n`);
  const [a] = await runs(s);
  assert.equal(a!.state, "abandoned");
  assert.equal(a!.tornTail?.line, 2);
});

test("torn tail: rejected when later non-terminal events follow, naming file and line", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a"));
  s.setText(segmentKey("a", 0), `${ev("a", 0, 0, "run_started")}\n{"torn`);
  s.setText(segmentKey("a", 1), `${ev("a", 1, 0, "span_committed", { key: "k" })}\n`);
  const e = await corrupt(s);
  assert.equal(e.file, segmentKey("a", 0));
  assert.equal(e.line, 2);
});

test("torn tail: rejected in the last segment of a terminal run", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a", "complete"));
  s.setText(segmentKey("a", 0), `${ev("a", 0, 0, "run_started")}\n${ev("a", 0, 1, "run_completed")}\n{"to`);
  assert.equal((await corrupt(s)).line, 3);
});

test("torn tail: at most once per run", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a"));
  s.setText(segmentKey("a", 0), `${ev("a", 0, 0, "run_started")}\n{"t`);
  s.setText(segmentKey("a", 1), `${ev("a", 1, 0, "run_abandoned")}\n{"t`);
  const e = await corrupt(s);
  assert.equal(e.file, segmentKey("a", 1));
  assert.match(e.message, /second torn tail/);
});

test("malformed line followed by a newline is corruption naming file and line", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a"));
  s.setText(segmentKey("a", 0), `${ev("a", 0, 0, "run_started")}\n{"broken\n`);
  const e = await corrupt(s);
  assert.equal(e.file, segmentKey("a", 0));
  assert.equal(e.line, 2);
  assert.match(e.message, /events-00000\.jsonl:2: malformed/);
});

test("a wrong schema_version on a line is corruption, even on an unterminated last line", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a"));
  s.setText(segmentKey("a", 0), ev("a", 0, 0, "run_started").replace('"v2"', '"v3"'));
  const e = await corrupt(s);
  assert.equal(e.line, 1);
  assert.match(e.message, /schema_version "v3"/);
});

test("an event without a record object is corruption", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a"));
  s.setText(segmentKey("a", 0), `${ev("a", 0, 0, "run_started").replace('"record":{}', '"record":[]')}\n`);
  assert.match((await corrupt(s)).message, /record must be an object/);
});

test("orphans: segments without run.json are missing_run_meta; unparseable run.json is unreadable_run_meta", async () => {
  const s = new TextMemoryStore();
  s.setText(segmentKey("m", 0), `${ev("m", 0, 0, "run_started")}\n`);
  s.setText(".firecube/runs/u/run.json", '{"schema_version":"v2",');
  s.setText(segmentKey("u", 0), `${ev("u", 0, 0, "run_started")}\n`);
  const [m, u] = await runs(s);
  assert.equal(m!.state, "orphaned");
  assert.equal(m!.orphanReason, "missing_run_meta");
  assert.equal(u!.orphanReason, "unreadable_run_meta");
  assert.equal(m!.stale, false);
  const later = await runs(s, manualClock(T0 + 3601));
  assert.equal(later[0]!.stale, true, "orphans can be stale (newest event older than 3600 s)");
});

test("a 0-byte run.json with no segments is skipped (a peer's first write in flight)", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/z/run.json", "");
  assert.deepEqual(await runs(s), []);
});

test("stale run: strictly more than run_stale_threshold_s since updated_at", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a"));
  s.setText(segmentKey("a", 0), `${ev("a", 0, 0, "run_started")}\n`);
  assert.equal((await runs(s, manualClock(T0 + 3600)))[0]!.stale, false);
  assert.equal((await runs(s, manualClock(T0 + 3600.001)))[0]!.stale, true);
});

test("unknown event types are read and kept; files that are not segments are ignored", async () => {
  const s = new TextMemoryStore();
  s.setText(".firecube/runs/a/run.json", runJson("a", "complete"));
  s.setText(".firecube/runs/a/events-00001.jsonl.tmp", "garbage");
  s.setText(".firecube/runs/a/run.json.tmp-123", "garbage");
  s.setText(
    segmentKey("a", 0),
    `${ev("a", 0, 0, "run_started")}\n${ev("a", 0, 1, "span_recorded", { key: "x", status: "active" })}\n${ev("a", 0, 2, "run_completed")}\n`,
  );
  const [a] = await runs(s);
  assert.deepEqual(
    a!.events.map((e) => e.event_type),
    ["run_started", "span_recorded", "run_completed"],
  );
  assert.equal(a!.state, "complete");
});

test("crash between temp and rename: staged files on a filesystem store are never read as documents", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cp-crash-"));
  try {
    const store = new FsStore(dir);
    const cp = await ControlPlane.open(store, {
      product: "demo",
      now: manualClock(T0),
      runHeartbeatIntervalS: 0,
      claimHeartbeatIntervalS: 0,
    });
    await cp.startRun({ runId: "c" });
    await cp.acquireClaim("zarr_append:g");
    // What a process killed after staging and before rename/link leaves behind, in FsStore's and in other spellings.
    const runDir = join(dir, ".firecube", "runs", "c");
    await writeFile(join(runDir, ".zs-tmp-999-deadbeef"), '{"partial');
    await writeFile(join(runDir, "run.json.tmp"), '{"partial');
    await writeFile(join(runDir, "events-00001.jsonl.tmp"), '{"partial');
    await writeFile(join(dir, ".firecube", "claims", ".zs-tmp-999-cafe"), '{"partial');
    await writeFile(join(dir, ".firecube", "claims", "x.json.tmp"), "{");
    const [c] = await cp.listRuns();
    assert.equal(c!.state, "live");
    assert.equal(c!.record?.status, "started");
    assert.deepEqual(c!.segments, [0]);
    assert.deepEqual(
      (await cp.listClaims()).map((v) => v.claim.domain),
      ["demo:zarr_append:g"],
    );
    await cp.appendEvent("c", "run_started_with_replacement", { replaces: [] });
    assert.deepEqual(
      (await cp.listRuns())[0]!.segments,
      [0, 1],
      "the next segment is written despite the debris",
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { ControlPlane } from "../src/index.js";
import { segmentKey } from "../src/layout.js";
import { manualClock, TextMemoryStore } from "./helpers/stores.js";

async function open(store = new TextMemoryStore(), clock = manualClock()) {
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: clock,
    runHeartbeatIntervalS: 0,
    ownerId: "me",
  });
  return { cp, store, clock };
}

function lines(store: TextMemoryStore, key: string) {
  return store
    .text(key)!
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
}

test("WAL: 1 + 30 + 1 events give 3 segments, run.json parts 3 and events 32", async () => {
  const { cp, store } = await open();
  const runId = await cp.startRun({ runId: "r1" });
  for (let i = 0; i < 30; i++) await cp.appendRecord(runId, { key: `span_${i}`, status: "active" });
  await cp.completeRun(runId);
  const segs = (await store.list(".firecube/runs/r1/")).filter((k) => k.includes("events-"));
  assert.deepEqual(
    segs,
    [0, 1, 2].map((p) => segmentKey("r1", p)),
  );
  assert.deepEqual(
    segs.map((k) => lines(store, k).length),
    [1, 25, 6],
  );
  const run = JSON.parse(store.text(".firecube/runs/r1/run.json")!);
  assert.equal(run.parts, 3);
  assert.equal(run.events, 32);
  assert.equal(run.status, "complete");
  assert.equal(typeof run.completed_at, "number");
});

test("WAL: event ids are <run>:<part 5>:<idx 6>, idx restarts per segment; segments end with newline", async () => {
  const { cp, store } = await open();
  const runId = await cp.startRun({ runId: "r2" });
  for (let i = 0; i < 26; i++)
    await cp.appendEvent(runId, "span_committed", { key: `k${i}`, status: "active" });
  await cp.completeRun(runId);
  const seg1 = lines(store, segmentKey("r2", 1));
  assert.equal(seg1[0].event_id, "r2:00001:000000");
  assert.equal(seg1[24].event_id, "r2:00001:000024");
  const seg2 = lines(store, segmentKey("r2", 2));
  assert.deepEqual(
    seg2.map((e) => e.event_id),
    ["r2:00002:000000", "r2:00002:000001"],
  );
  assert.ok(store.text(segmentKey("r2", 0))!.endsWith("\n"));
});

test("WAL: byte format of run_started line and run.json follows the reference key order and float timestamps", async () => {
  const { cp, store } = await open(new TextMemoryStore(), manualClock(1724000000));
  await cp.startRun({ runId: "r3" });
  const line = store.text(segmentKey("r3", 0))!;
  assert.equal(
    line,
    `{"schema_version":"v2","event_id":"r3:00000:000000","event_type":"run_started","product":"demo","run_id":"r3","timestamp":1724000000.0,"record":{"key":"run_r3","type":"run","size":0,"timestamp":1724000000.0,"status":"started","meta":{"run_id":"r3"},"run":{"output_path":"${store.url}","output_format":"zarr"},"schema_version":"v2"},"meta":{"run_id":"r3"}}\n`,
  );
  const run = store.text(".firecube/runs/r3/run.json")!;
  assert.equal(
    run,
    `{"schema_version":"v2","product":"demo","run_id":"r3","status":"started","parts":1,"events":1,"started_at":1724000000.0,"updated_at":1724000000.0,"run_uri":"${store.url}/.firecube/runs/r3","run_stale_threshold_s":3600}`,
  );
  assert.equal(
    store.text(".firecube/schema.json"),
    '{"schema_version": "v2", "layout": "chunkmanager-v2", "created_at": 1724000000.0}',
  );
});

test("WAL: replacement and maintenance events flush immediately; plain records wait for 25", async () => {
  const { cp, store } = await open();
  const runId = await cp.startRun({ runId: "r4", replaces: ["old"] });
  await cp.appendRecord(runId, { key: "a", status: "active" });
  assert.equal((await store.list(".firecube/runs/r4/events-")).length, 1);
  await cp.appendEvent(runId, "replacement_committed", { replacing_run_id: "r4", replaced_span_keys: ["a"] });
  assert.equal((await store.list(".firecube/runs/r4/events-")).length, 2);
  assert.equal(lines(store, segmentKey("r4", 0))[0].event_type, "run_started_with_replacement");
  assert.deepEqual(lines(store, segmentKey("r4", 0))[0].record.replaces, ["old"]);
});

test("WAL: run.json heartbeat on append (at most once a second) and on heartbeatRun", async () => {
  const { cp, store, clock } = await open();
  const runId = await cp.startRun({ runId: "r5" });
  const updated = () => JSON.parse(store.text(".firecube/runs/r5/run.json")!).updated_at;
  const t0 = updated();
  clock.advance(0.5);
  await cp.appendRecord(runId, { key: "a", status: "active" });
  assert.equal(updated(), t0);
  clock.advance(1);
  await cp.appendRecord(runId, { key: "b", status: "active" });
  assert.equal(updated(), t0 + 1.5);
  clock.advance(10);
  await cp.heartbeatRun(runId);
  assert.equal(updated(), t0 + 11.5);
});

test("WAL: heartbeat timer rewrites run.json without any append", async () => {
  const store = new TextMemoryStore();
  let t = 1724000000;
  const cp = await ControlPlane.open(store, { product: "demo", now: () => t, runHeartbeatIntervalS: 0.02 });
  await cp.startRun({ runId: "tick" });
  t += 100;
  await new Promise((r) => setTimeout(r, 120));
  assert.equal(JSON.parse(store.text(".firecube/runs/tick/run.json")!).updated_at, 1724000100);
  await cp.close();
});

test("WAL: a reopened run starts at max(existing)+1 and segments are ordered numerically (99999 < 100000)", async () => {
  const { cp, store } = await open();
  const runId = await cp.startRun({ runId: "r6" });
  await cp.close();
  // A run that has already used 100000 parts: string order would put events-100000 before events-99999.
  const line = (p: number) =>
    `{"schema_version":"v2","event_id":"r6:${p}:000000","event_type":"span_committed","product":"demo","run_id":"r6","timestamp":1.0,"record":{"key":"k${p}","status":"active"}}\n`;
  store.setText(segmentKey("r6", 99999), line(99999));
  store.setText(segmentKey("r6", 100000), line(100000));
  assert.equal(segmentKey("r6", 100000), ".firecube/runs/r6/events-100000.jsonl");
  const cp2 = (await open(store)).cp;
  await cp2.resumeRun(runId);
  await cp2.appendEvent(runId, "span_committed", { key: "after", status: "active" });
  await cp2.completeRun(runId);
  const view = (await cp2.listRuns()).find((r) => r.runId === "r6")!;
  assert.deepEqual(view.segments.slice(-3), [99999, 100000, 100001]);
  assert.deepEqual(view.events.map((e) => e.record.key).slice(-4, -1), ["k99999", "k100000", "after"]);
  assert.equal(view.events.at(-2)!.event_id, "r6:100001:000000");
  assert.equal(view.state, "complete");
});

test("WAL: a segment is never appended to or overwritten — a second writer on the same part fails", async () => {
  const { cp, store } = await open();
  await cp.startRun({ runId: "r7" });
  store.setText(segmentKey("r7", 1), "");
  await cp.appendEvent("r7", "maintenance_started", { op: "x" }).then(
    () => assert.fail("expected refusal"),
    (e: Error) => assert.match(e.message, /events-00001\.jsonl already exists/),
  );
});

/** A store that fails the next write to a key containing `match`: after it lands (lost ack) or before. */
class FlakyStore extends TextMemoryStore {
  fault: { match: string; landed: boolean } | undefined;
  #trip(key: string): { landed: boolean } | undefined {
    const f = this.fault;
    if (f === undefined || !key.includes(f.match)) return undefined;
    this.fault = undefined;
    return f;
  }
  override async put(key: string, bytes: Uint8Array): Promise<void> {
    const f = this.#trip(key);
    if (f?.landed === false) throw new Error(`injected: put ${key} failed`);
    await super.put(key, bytes);
    if (f) throw new Error(`injected: put ${key} lost its acknowledgement`);
  }
  override async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    const f = this.#trip(key);
    if (f?.landed === false) throw new Error(`injected: create ${key} failed`);
    const created = await super.putIfAbsent(key, bytes);
    if (f) throw new Error(`injected: create ${key} lost its acknowledgement`);
    return created;
  }
}

function events(store: TextMemoryStore, runId: string, parts: number) {
  return Array.from({ length: parts }, (_, p) => lines(store, segmentKey(runId, p))).flat();
}

test("WAL: a segment whose create lost its acknowledgement is found landed by the next flush, written once", async () => {
  const store = new FlakyStore();
  const { cp } = await open(store);
  await cp.startRun({ runId: "r8" });
  store.fault = { match: "events-00001", landed: true };
  await assert.rejects(cp.appendEvent("r8", "maintenance_started", { op: "x" }), /lost its acknowledgement/);
  await cp.flushRun("r8");
  await cp.appendEvent("r8", "maintenance_started", { op: "y" });
  await cp.completeRun("r8");
  assert.deepEqual(
    events(store, "r8", 4).map((e) => `${e.event_type} ${e.record.op ?? ""}`),
    ["run_started ", "maintenance_started x", "maintenance_started y", "run_completed "],
  );
  const run = JSON.parse(store.text(".firecube/runs/r8/run.json")!);
  assert.deepEqual([run.parts, run.events, run.status], [4, 4, "complete"]);
});

test("WAL: a finish whose run.json write failed is retried to the same terminal event, written once", async () => {
  const store = new FlakyStore();
  const { cp } = await open(store);
  await cp.startRun({ runId: "r9" });
  store.fault = { match: "run.json", landed: false };
  const failed = await cp.completeRun("r9").then(
    () => assert.fail("expected the injected failure"),
    (e: Error) => e,
  );
  assert.match(failed.message, /put .*run\.json failed/);
  assert.equal(JSON.parse(store.text(".firecube/runs/r9/run.json")!).status, "started");
  await assert.rejects(cp.failRun("r9", "late"), /already ending with run_completed/);
  const id = await cp.completeRun("r9");
  assert.equal(id, events(store, "r9", 2)[1].event_id);
  assert.deepEqual(
    events(store, "r9", 2).map((e) => e.event_type),
    ["run_started", "run_completed"],
  );
  assert.equal(await store.get(segmentKey("r9", 2)), undefined);
  const run = JSON.parse(store.text(".firecube/runs/r9/run.json")!);
  assert.deepEqual([run.parts, run.events, run.status], [2, 2, "complete"]);
});

test("WAL: closing a run writer whose flush fails still stops its heartbeat", async () => {
  const store = new FlakyStore();
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: manualClock(),
    runHeartbeatIntervalS: 0.02,
    ownerId: "me",
  });
  await cp.startRun({ runId: "r10" });
  await cp.appendRecord("r10", { key: "span_0", status: "active" });
  store.fault = { match: "events-00001", landed: false };
  await assert.rejects(cp.close(), /create .*events-00001.* failed/);
  let heartbeats = 0;
  const put = store.put.bind(store);
  store.put = async (key, bytes) => {
    if (key.endsWith("run.json")) heartbeats++;
    return put(key, bytes);
  };
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.equal(heartbeats, 0);
});

test("WAL: bad input is refused before any I/O", async () => {
  const { cp, store } = await open();
  await assert.rejects(cp.startRun({ runId: "a:b" }), { name: "SchemaError" });
  await assert.rejects(cp.startRun({ runId: "a/b" }), { name: "SchemaError" });
  await assert.rejects(cp.appendEvent("nope", "span_committed", {}), { name: "ProtocolError" });
  assert.deepEqual(await store.list(""), []);
});

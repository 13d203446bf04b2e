import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ATTR_INDEX,
  ATTR_INDEX_HASH,
  ATTR_SLOT_MODEL,
  ATTR_SLOT_MODEL_HASH,
  ControlPlane,
  ManifestError,
  ResolvedIndexConflict,
  resolvedIndexIdentityHash,
  SLOT_INDEX_CLAIM,
} from "../src/index.js";
import { INDEX_KEY, SLOT_INDEX_KEY } from "../src/layout.js";
import { manualClock, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;
const INDEX = {
  groups: { data: { kind: "integer", params: {}, size: 12 } },
  name: "integer_only_v1",
  schema_version: "v1",
};
const HASH = "ac6579db66b817cf4c5e35fe54745d57dcf27a70070d4eca8c7da4d078360a1c";
const OTHER = { ...INDEX, groups: { data: { kind: "integer", params: {}, size: 24 } } };

async function setup(store = new TextMemoryStore(), ownerId = "me", claimWaitS = 5) {
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: manualClock(T0),
    ownerId,
    runHeartbeatIntervalS: 0,
    claimHeartbeatIntervalS: 0,
    claimWaitS,
  });
  const runId = await cp.startRun({ runId: `run-${ownerId}` });
  return { cp, store, runId };
}

async function ensuredOutcomes(cp: ControlPlane, runId: string) {
  await cp.flushRun(runId);
  const run = (await cp.listRuns()).find((r) => r.runId === runId)!;
  return run.events.filter((e) => e.event_type === "index_ensured").map((e) => e.record.outcome);
}

async function attrs(store: TextMemoryStore) {
  return JSON.parse(store.text("zarr.json")!).attributes;
}

test("row 1: fresh store writes canonical record and mirrored attrs, outcome created", async () => {
  const { cp, store, runId } = await setup();
  const r = await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  assert.equal(r.outcome, "created");
  assert.equal(r.row, 1);
  assert.equal(r.identityHash, HASH);
  assert.equal(
    store.text(INDEX_KEY),
    `{"identity_hash":"${HASH}","index":{"groups":{"data":{"kind":"integer","params":{},"size":12}},"name":"integer_only_v1","schema_version":"v1"},"recorded_at":"2024-08-18T16:53:20.000Z","recorded_by_run_id":"run-me","schema_version":"v1"}`,
  );
  const a = await attrs(store);
  assert.equal(a[ATTR_INDEX_HASH], HASH);
  assert.equal(a[ATTR_INDEX], JSON.stringify(INDEX));
  assert.deepEqual(await ensuredOutcomes(cp, runId), ["created"]);
  const ev = (await cp.listRuns())[0]!.events.find((e) => e.event_type === "index_ensured")!;
  assert.deepEqual(Object.keys(ev.record), [
    "schema_version",
    "run_id",
    "product",
    "identity_hash",
    "axis_kinds",
    "groups",
    "outcome",
    "timestamp",
  ]);
  assert.deepEqual(ev.record.axis_kinds, ["integer"]);
  assert.deepEqual(ev.record.groups, ["data"]);
  assert.equal(await store.list(".firecube/claims/").then((k) => k.length), 0, "index claim released");
});

test("row 2: record and attrs both match, outcome matched_existing", async () => {
  const { cp, runId } = await setup();
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  const r = await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  assert.equal(r.outcome, "matched_existing");
  assert.equal(r.row, 2);
});

test("row 3: record matches, attrs absent: attrs re-mirrored, outcome created", async () => {
  const { cp, store, runId } = await setup();
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  store.setText("zarr.json", JSON.stringify({ zarr_format: 3, node_type: "group", attributes: { keep: 1 } }));
  const r = await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  assert.deepEqual([r.outcome, r.row], ["created", 3]);
  const a = await attrs(store);
  assert.equal(a[ATTR_INDEX_HASH], HASH);
  assert.equal(a.keep, 1);
});

test("row 4: attrs without a record are refused with a ManifestError", async () => {
  const { cp, store, runId } = await setup();
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  await store.delete(INDEX_KEY);
  await assert.rejects(
    cp.ensureResolvedIndex({ index: INDEX }, { runId }),
    (e: unknown) => e instanceof ManifestError && e.reason === "attrs-without-record",
  );
  assert.equal(await store.get(INDEX_KEY), undefined, "nothing was written");
});

test("row 5: a changed declaration is refused with a field diff and a conflict_refused event", async () => {
  const { cp, store, runId } = await setup();
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  const before = store.text(INDEX_KEY);
  const err = await cp.ensureResolvedIndex({ index: OTHER }, { runId }).catch((e: unknown) => e);
  assert.ok(err instanceof ResolvedIndexConflict);
  assert.deepEqual(err.diff, [{ path: "/index/groups/data/size", recorded: 12, declared: 24 }]);
  assert.equal(err.recordedHash, HASH);
  assert.match(err.message, /\/index\/groups\/data\/size: 12 -> 24/);
  assert.equal(store.text(INDEX_KEY), before);
  assert.deepEqual(await ensuredOutcomes(cp, runId), ["created", "conflict_refused"]);
});

test("row 6: a record whose schema_version is not v1 is refused first, whatever the declaration", async () => {
  const { cp, store, runId } = await setup();
  store.setText(INDEX_KEY, JSON.stringify({ identity_hash: HASH, index: INDEX, schema_version: "v2" }));
  for (const index of [INDEX, OTHER]) {
    await assert.rejects(
      cp.ensureResolvedIndex({ index }, { runId }),
      (e: unknown) => e instanceof ManifestError && e.reason === "unsupported-schema-version",
    );
  }
});

test("row 7: record matches but attrs disagree is a drift error", async () => {
  const { cp, store, runId } = await setup();
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  store.setText("zarr.json", JSON.stringify({ attributes: { [ATTR_INDEX_HASH]: "0".repeat(64) } }));
  await assert.rejects(
    cp.ensureResolvedIndex({ index: INDEX }, { runId }),
    (e: unknown) => e instanceof ManifestError && e.reason === "attrs-drift",
  );
  store.setText(
    "zarr.json",
    JSON.stringify({ attributes: { [ATTR_INDEX_HASH]: HASH, [ATTR_INDEX]: '{"x":1}' } }),
  );
  await assert.rejects(cp.ensureResolvedIndex({ index: INDEX }, { runId }), {
    name: "ManifestError",
    reason: "attrs-drift",
  });
  assert.equal((await cp.verifyResolvedIndex()).attrs, "drift");
});

test("tamper detection: a record whose content no longer hashes to identity_hash is refused", async () => {
  const { cp, store, runId } = await setup();
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  store.setText(INDEX_KEY, store.text(INDEX_KEY)!.replace('"size":12', '"size":13'));
  await assert.rejects(cp.ensureResolvedIndex({ index: INDEX }, { runId }), /identity-hash mismatch/);
  await assert.rejects(cp.verifyResolvedIndex(), { name: "ManifestError", reason: "identity-hash-mismatch" });
});

test("items: record stores items by coordinate value and the hash covers them", async () => {
  const { cp, store, runId } = await setup();
  const items = [
    { identity_hash: "bbb", coordinate_value: 1, source_ref: "/x/b", source_ref_kind: "path" },
    { identity_hash: "aaa", coordinate_value: 0, source_ref: "/x/a", source_ref_kind: "path" },
  ];
  const r = await cp.ensureResolvedIndex({ index: INDEX, items }, { runId });
  assert.equal(r.identityHash, "55ff629b0ba801584db2e847dca62e39f0a5a4c6e675495adbeaa3445cafed7a");
  const rec = JSON.parse(store.text(INDEX_KEY)!);
  assert.deepEqual(
    rec.items.map((i: { coordinate_value: number }) => i.coordinate_value),
    [0, 1],
  );
  const conflict = await cp
    .ensureResolvedIndex({ index: INDEX, items: items.slice(0, 1) }, { runId })
    .catch((e: unknown) => e);
  assert.ok(conflict instanceof ResolvedIndexConflict);
  assert.deepEqual(
    conflict.diff.map((d) => d.path),
    ["/items"],
  );
});

test("rebuild: re-mirrors drifted attrs from a matching record; never overwrites a divergent record", async () => {
  const { cp, store, runId } = await setup();
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  store.setText("zarr.json", JSON.stringify({ attributes: { [ATTR_INDEX_HASH]: "f".repeat(64) } }));
  const r = await cp.rebuildResolvedIndex({ index: INDEX }, { runId });
  assert.equal(r.outcome, "rebuilt");
  assert.equal((await attrs(store))[ATTR_INDEX_HASH], HASH);
  const before = store.text(INDEX_KEY);
  await assert.rejects(cp.rebuildResolvedIndex({ index: OTHER }, { runId }), {
    name: "ResolvedIndexConflict",
  });
  assert.equal(store.text(INDEX_KEY), before);
});

test("convergence: the process that loses the index claim waits for the winner, then matches its record", async () => {
  const store = new TextMemoryStore();
  const a = await setup(store, "a");
  const b = await setup(store, "b");
  await a.cp.acquireClaim("resolved_index:current");
  const pending = b.cp.ensureResolvedIndex({ index: INDEX }, { runId: b.runId });
  await new Promise((r) => setTimeout(r, 80));
  // the winner finishes its work and lets go
  await a.cp.releaseClaim("resolved_index:current");
  await a.cp.ensureResolvedIndex({ index: INDEX }, { runId: a.runId }).catch(() => undefined);
  const outcome = (await pending).outcome;
  const outcomes = [...(await ensuredOutcomes(a.cp, a.runId)), outcome].sort();
  assert.deepEqual(outcomes, ["created", "matched_existing"]);
});

test("convergence: a stale holder of the index claim is reported, never taken over", async () => {
  const store = new TextMemoryStore();
  const clock = manualClock(T0);
  const holder = await ControlPlane.open(store, {
    product: "demo",
    now: clock,
    ownerId: "dead",
    claimHeartbeatIntervalS: 0,
  });
  await holder.acquireClaim("resolved_index:current");
  clock.advance(500);
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: clock,
    ownerId: "me",
    runHeartbeatIntervalS: 0,
  });
  const runId = await cp.startRun({ runId: "x" });
  await assert.rejects(cp.ensureResolvedIndex({ index: INDEX }, { runId }), {
    name: "ClaimConflict",
    owner: "dead",
    stale: true,
  });
  assert.equal(await store.get(INDEX_KEY), undefined);
});

test("convergence: a fresh holder that never lets go ends in a ClaimConflict after the wait", async () => {
  const store = new TextMemoryStore();
  const a = await setup(store, "a");
  const b = await setup(store, "b", 0.1);
  await a.cp.acquireClaim("resolved_index:current");
  await assert.rejects(b.cp.ensureResolvedIndex({ index: INDEX }, { runId: b.runId }), {
    name: "ClaimConflict",
    owner: "a",
    stale: false,
  });
});

test("identity hash export agrees with the record written", async () => {
  const { cp, store, runId } = await setup();
  await cp.ensureResolvedIndex({ index: OTHER }, { runId });
  assert.equal(JSON.parse(store.text(INDEX_KEY)!).identity_hash, resolvedIndexIdentityHash(OTHER));
});

test("slot index: recorded once, verified after, conflicts and tampering refused", async () => {
  const { cp, store, runId } = await setup();
  const model = {
    epoch: "2026-01-01T00:00:00Z",
    groups: { g1: { cadence_s: 300, mode: "exact" } },
    name: "opera_v1",
    schema_version: "v1",
    time_unit: null,
  };
  assert.equal((await cp.ensureSlotIndexModel(model, { runId })).outcome, "recorded");
  assert.equal(
    JSON.parse(store.text(SLOT_INDEX_KEY)!).identity_hash,
    "bc441fbb3eb848c54db2c4673e75271d3b98dbb2b7b49081b521b7ef3923a894",
  );
  assert.equal((await cp.ensureSlotIndexModel(model, { runId })).outcome, "verified");
  await assert.rejects(
    cp.ensureSlotIndexModel({ ...model, groups: { g1: { cadence_s: 60, mode: "exact" } } }, { runId }),
    { name: "ResolvedIndexConflict" },
  );
  store.setText(SLOT_INDEX_KEY, store.text(SLOT_INDEX_KEY)!.replace("300", "301"));
  await assert.rejects(cp.ensureSlotIndexModel(model, { runId }), {
    name: "ManifestError",
    reason: "identity-hash-mismatch",
  });
  await cp.flushRun(runId);
  const types = (await cp.listRuns())[0]!.events.map((e) => e.event_type);
  assert.deepEqual(
    types.filter((t) => t.startsWith("slot_")),
    ["slot_index_model_recorded", "slot_index_model_verified"],
  );
});

test("slot index: mirrored into root attributes, under its own claim, with rows 3, 4 and 7", async () => {
  const { cp, store, runId } = await setup();
  const model = {
    epoch: "2026-01-01T00:00:00Z",
    groups: { g1: { cadence_s: 300, mode: "exact" } },
    name: "opera_v1",
    schema_version: "v1",
    time_unit: null,
  };
  const golden = "bc441fbb3eb848c54db2c4673e75271d3b98dbb2b7b49081b521b7ef3923a894";
  const first = await cp.ensureSlotIndexModel(model, { runId });
  assert.deepEqual([first.outcome, first.row], ["recorded", 1]);
  const attrs = () => JSON.parse(store.text("zarr.json")!).attributes;
  assert.equal(attrs()[ATTR_SLOT_MODEL_HASH], golden);
  assert.equal(
    attrs()[ATTR_SLOT_MODEL],
    '{"epoch":"2026-01-01T00:00:00Z","groups":{"g1":{"cadence_s":300,"mode":"exact"}},"name":"opera_v1","schema_version":"v1","time_unit":null}',
  );
  assert.equal((await cp.ensureSlotIndexModel(model, { runId })).row, 2);

  // Row 3: the mirror is lost (a store rewritten without its attributes): re-mirrored from the record.
  store.setText("zarr.json", JSON.stringify({ zarr_format: 3, node_type: "group", attributes: {} }));
  assert.deepEqual(Object.values(await cp.ensureSlotIndexModel(model, { runId })).slice(0, 3), [
    "verified",
    golden,
    3,
  ]);
  assert.equal(attrs()[ATTR_SLOT_MODEL_HASH], golden);

  // Row 7: the mirror drifted from the record.
  store.setText("zarr.json", JSON.stringify({ attributes: { [ATTR_SLOT_MODEL_HASH]: "0".repeat(64) } }));
  await assert.rejects(cp.ensureSlotIndexModel(model, { runId }), {
    name: "ManifestError",
    reason: "attrs-drift",
  });

  // Row 4: attributes without a record.
  await store.delete(SLOT_INDEX_KEY);
  await assert.rejects(cp.ensureSlotIndexModel(model, { runId }), {
    name: "ManifestError",
    reason: "attrs-without-record",
  });

  // The model claim is held while the rows are evaluated: another holder makes a second writer wait and fail.
  const other = await ControlPlane.open(store, {
    product: "demo",
    ownerId: "other",
    claimHeartbeatIntervalS: 0,
  });
  await other.acquireClaim(SLOT_INDEX_CLAIM);
  const late = await setup(store, "late", 0.05);
  await assert.rejects(late.cp.ensureSlotIndexModel(model, { runId: late.runId }), {
    name: "ClaimConflict",
    owner: "other",
  });
});

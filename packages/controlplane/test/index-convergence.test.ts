// The resolved index and slot index as the reference (firecube 0.1.7) decides them on a shared product:
// a held claim, row 4 on rebuild, unknown keys in items and models, the item order, `index verify` codes.
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
  runControlPlaneCli,
  SLOT_INDEX_CLAIM,
  slotIndexIdentityHash,
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
const MODEL = {
  epoch: "2026-01-01T00:00:00Z",
  groups: { g1: { cadence_s: 300, mode: "exact" } },
  name: "opera_v1",
  schema_version: "v1",
  time_unit: null,
};
const MODEL_HASH = "bc441fbb3eb848c54db2c4673e75271d3b98dbb2b7b49081b521b7ef3923a894";

async function open(store: TextMemoryStore, ownerId: string, clock = manualClock(T0), claimWaitS = 5) {
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: clock,
    ownerId,
    runHeartbeatIntervalS: 0,
    claimHeartbeatIntervalS: 0,
    claimWaitS,
  });
  return { cp, runId: await cp.startRun({ runId: `run-${ownerId}` }) };
}

async function events(cp: ControlPlane, runId: string, type: string) {
  await cp.flushRun(runId);
  const run = (await cp.listRuns()).find((r) => r.runId === runId)!;
  return run.events.filter((e) => e.event_type === type).map((e) => e.record);
}

const attrs = (store: TextMemoryStore) => JSON.parse(store.text("zarr.json")!).attributes;

test("held index claim: as the reference's losing writer, a record and attrs that agree give matched_existing at once, stale holder or fresh", async () => {
  const store = new TextMemoryStore();
  const clock = manualClock(T0);
  const a = await open(store, "a", clock);
  await a.cp.ensureResolvedIndex({ index: INDEX }, { runId: a.runId });
  await a.cp.acquireClaim("resolved_index:current");
  const b = await open(store, "b", clock, 0.05);
  const began = performance.now();
  const fresh = await b.cp.ensureResolvedIndex({ index: INDEX }, { runId: b.runId });
  assert.deepEqual([fresh.outcome, fresh.row], ["matched_existing", 2]);
  assert.ok(performance.now() - began < 1000, "no wait for the holder");
  clock.advance(500); // the holder is now stale: still no takeover, still the same answer
  assert.equal(
    (await b.cp.ensureResolvedIndex({ index: INDEX }, { runId: b.runId })).outcome,
    "matched_existing",
  );
  assert.deepEqual(
    (await events(b.cp, b.runId, "index_ensured")).map((r) => r.outcome),
    ["matched_existing", "matched_existing"],
  );
  const [held] = await store.list(".firecube/claims/");
  assert.match(store.text(held!)!, /"owner_id":"a"/, "the claim is still a's");

  // Record present, attrs lost: re-mirrored from the record (the reference does the same), matched_existing.
  store.setText("zarr.json", JSON.stringify({ zarr_format: 3, node_type: "group", attributes: {} }));
  const remirrored = await b.cp.ensureResolvedIndex({ index: INDEX }, { runId: b.runId });
  assert.deepEqual([remirrored.outcome, remirrored.row], ["matched_existing", 3]);
  assert.equal(attrs(store)[ATTR_INDEX_HASH], HASH);

  // Attrs drifted: the drift error. A different declaration: the conflict, with its conflict_refused event.
  store.setText("zarr.json", JSON.stringify({ attributes: { [ATTR_INDEX_HASH]: "0".repeat(64) } }));
  await assert.rejects(b.cp.ensureResolvedIndex({ index: INDEX }, { runId: b.runId }), {
    name: "ManifestError",
    reason: "attrs-drift",
  });
  const other = { ...INDEX, name: "other" };
  await assert.rejects(b.cp.ensureResolvedIndex({ index: other }, { runId: b.runId }), ResolvedIndexConflict);
  assert.equal((await events(b.cp, b.runId, "index_ensured")).at(-1)!.outcome, "conflict_refused");

  // No record yet: nothing to judge, so a stale holder is a ClaimConflict (never taken over).
  await store.delete(INDEX_KEY);
  await assert.rejects(b.cp.ensureResolvedIndex({ index: INDEX }, { runId: b.runId }), {
    name: "ClaimConflict",
    owner: "a",
    stale: true,
  });
});

test("held slot-index claim: verified at once when record and attrs agree, with the reference's model_name", async () => {
  const store = new TextMemoryStore();
  const a = await open(store, "a");
  await a.cp.ensureSlotIndexModel(MODEL, { runId: a.runId });
  await a.cp.acquireClaim(SLOT_INDEX_CLAIM);
  const b = await open(store, "b", manualClock(T0), 0.05);
  const r = await b.cp.ensureSlotIndexModel(MODEL, { runId: b.runId });
  assert.deepEqual([r.outcome, r.row], ["verified", 2]);
  assert.deepEqual(await events(b.cp, b.runId, "slot_index_model_verified"), [
    { identity_hash: MODEL_HASH, model_name: "opera_v1" },
  ]);
  assert.deepEqual(await events(a.cp, a.runId, "slot_index_model_recorded"), [
    { identity_hash: MODEL_HASH, model_name: "opera_v1" },
  ]);
  await assert.rejects(
    b.cp.ensureSlotIndexModel({ ...MODEL, name: "other" }, { runId: b.runId }),
    ResolvedIndexConflict,
  );
});

test("row 4 on rebuild: attrs without a record are rebuilt from only when they verify; otherwise the ManifestError", async () => {
  const store = new TextMemoryStore();
  const { cp, runId } = await open(store, "w");
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  const record = store.text(INDEX_KEY)!;
  await store.delete(INDEX_KEY);
  let out = "";
  const cli = (...argv: string[]) =>
    runControlPlaneCli(["--store", "/p", "--product", "demo", ...argv], {
      out: (t) => {
        out += t;
      },
      err: (t) => {
        out += t;
      },
      openStore: () => store,
      now: manualClock(T0),
    });

  // The hash is not the payload's: refused, nothing written, the attrs left as they are.
  const tampered = { [ATTR_INDEX]: JSON.stringify({ ...INDEX, name: "x" }), [ATTR_INDEX_HASH]: HASH };
  store.setText("zarr.json", JSON.stringify({ zarr_format: 3, node_type: "group", attributes: tampered }));
  assert.equal(await cli("index", "rebuild"), 1);
  assert.match(out, /ManifestError: .*row 4.*do not verify/);
  assert.equal(await store.get(INDEX_KEY), undefined);
  assert.deepEqual(attrs(store), tampered);
  await assert.rejects(cp.rebuildResolvedIndex({ index: { ...INDEX, name: "x" } }, { runId }), {
    name: "ManifestError",
    reason: "attrs-without-record",
  });
  out = "";
  store.setText(
    "zarr.json",
    JSON.stringify({ attributes: { [ATTR_INDEX]: "{not json", [ATTR_INDEX_HASH]: HASH } }),
  );
  assert.equal(await cli("index", "rebuild"), 1);
  assert.match(out, /not JSON/);

  // The attrs verify (the hash is their payload's): the record is rebuilt from them (firecube refuses).
  store.setText(
    "zarr.json",
    JSON.stringify({ attributes: { [ATTR_INDEX]: JSON.stringify(INDEX), [ATTR_INDEX_HASH]: HASH } }),
  );
  out = "";
  assert.equal(await cli("index", "rebuild", "--json"), 0, out);
  assert.equal(JSON.parse(out).outcome, "rebuilt");
  assert.equal(JSON.parse(store.text(INDEX_KEY)!).identity_hash, JSON.parse(record).identity_hash);
  // An ensure (not a rebuild) still refuses row 4, as the reference does.
  await store.delete(INDEX_KEY);
  await assert.rejects(cp.ensureResolvedIndex({ index: INDEX }, { runId }), {
    name: "ManifestError",
    reason: "attrs-without-record",
  });
});

test("items: a key beyond the four an item has is dropped, as the reference reads it; items ordered by str(coordinate_value)", async () => {
  const store = new TextMemoryStore();
  const { cp, runId } = await open(store, "w");
  const items = [
    { identity_hash: "c", coordinate_value: 10, source_ref: "/x/c", source_ref_kind: "path" },
    { identity_hash: "a", coordinate_value: 9, source_ref: "/x/a", source_ref_kind: "path" },
    {
      identity_hash: "b",
      coordinate_value: 1.5,
      source_ref: "/x/b",
      source_ref_kind: "path",
      note: "dropped",
    },
  ];
  const hash = resolvedIndexIdentityHash(INDEX, items);
  assert.equal(
    hash,
    resolvedIndexIdentityHash(
      INDEX,
      items.map(({ note: _, ...i }) => i),
    ),
  );
  await cp.ensureResolvedIndex({ index: INDEX, items }, { runId });
  const rec = JSON.parse(store.text(INDEX_KEY)!);
  assert.deepEqual(
    rec.items.map((i: { coordinate_value: number }) => i.coordinate_value),
    [1.5, 10, 9],
    "Python's sorted(key=str): '1.5' < '10' < '9'",
  );
  assert.ok(rec.items.every((i: object) => !("note" in i)));
  // A peer wrote an unknown key into a stored item: it verifies, and the same declaration still matches.
  rec.items[0].added_later = { x: 1 };
  rec.extra_top_level = true;
  store.setText(INDEX_KEY, JSON.stringify(rec));
  assert.deepEqual((await cp.verifyResolvedIndex()).attrs, "match");
  assert.equal(
    (await cp.ensureResolvedIndex({ index: INDEX, items }, { runId })).outcome,
    "matched_existing",
  );
  // An item without a field the reference requires is a malformed record.
  delete rec.items[0].source_ref;
  store.setText(INDEX_KEY, JSON.stringify(rec));
  await assert.rejects(
    cp.verifyResolvedIndex(),
    (e: unknown) => e instanceof ManifestError && /misses source_ref/.test(e.message),
  );
});

test("slot index: unknown keys in the stored model or its groups are compared in canonical form, so they verify", async () => {
  const store = new TextMemoryStore();
  const { cp, runId } = await open(store, "w");
  await cp.ensureSlotIndexModel(MODEL, { runId });
  const rec = JSON.parse(store.text(SLOT_INDEX_KEY)!);
  rec.model.added = "by a later writer";
  rec.model.groups.g1.jitter_s = 3;
  rec.unknown = 1;
  store.setText(SLOT_INDEX_KEY, JSON.stringify(rec));
  const r = await cp.ensureSlotIndexModel(MODEL, { runId });
  assert.deepEqual([r.outcome, r.row, r.identityHash], ["verified", 2, MODEL_HASH]);
  // Re-mirrored from such a record, the attrs carry the canonical model, as the reference writes them.
  store.setText("zarr.json", JSON.stringify({ attributes: {} }));
  assert.equal((await cp.ensureSlotIndexModel(MODEL, { runId })).row, 3);
  assert.equal(
    attrs(store)[ATTR_SLOT_MODEL],
    '{"epoch":"2026-01-01T00:00:00Z","groups":{"g1":{"cadence_s":300,"mode":"exact"}},"name":"opera_v1","schema_version":"v1","time_unit":null}',
  );
  assert.equal(attrs(store)[ATTR_SLOT_MODEL_HASH], MODEL_HASH);
  // The model's identity is the reference's: any model schema_version hashes as v1, so declaring another is refused.
  assert.equal(slotIndexIdentityHash({ ...MODEL, extra: 1 } as typeof MODEL), MODEL_HASH);
  await assert.rejects(cp.ensureSlotIndexModel({ ...MODEL, schema_version: "v2" }, { runId }), {
    name: "SchemaError",
  });
  await assert.rejects(
    cp.ensureSlotIndexModel({ ...MODEL, groups: { g1: { cadence_s: 0, mode: "exact" } } }, { runId }),
    /cadence_s must be a positive integer/,
  );
});

test("index show and verify exit 3 on a product without an index record (firecube's code); 1 with only a legacy slot-index record", async () => {
  const store = new TextMemoryStore();
  const cli = (...argv: string[]) =>
    runControlPlaneCli(["--store", "/p", "--product", "demo", ...argv], {
      out: () => undefined,
      err: () => undefined,
      openStore: () => store,
      now: manualClock(T0),
    });
  assert.equal(await cli("index", "verify"), 3);
  assert.equal(await cli("index", "show"), 3);
  const { cp, runId } = await open(store, "w");
  await cp.ensureSlotIndexModel(MODEL, { runId });
  assert.equal(await cli("index", "verify"), 1);
  await cp.ensureResolvedIndex({ index: INDEX }, { runId });
  assert.equal(await cli("index", "verify"), 0);
  assert.equal(await cli("index", "show"), 0);
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ClaimConflict, ControlPlane, ResolvedIndexConflict } from "@zarr-stream/controlplane";
import { ClaimLost, Fenced, type StreamSchema } from "@zarr-stream/spec";
import { MemoryStore, type Store } from "@zarr-stream/store";
import { type WriterOptions, ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";

const cp = (ownerId: string): WriterOptions => ({
  controlPlane: {
    product: "DEMO",
    options: { ownerId, claimHeartbeatIntervalS: 0, runHeartbeatIntervalS: 0 },
  },
});

async function events(store: Store): Promise<string[]> {
  const plane = await ControlPlane.open(store, { product: "DEMO" });
  const runs = await plane.listRuns();
  await plane.close();
  return runs.flatMap((r) => r.events.map((e) => `${r.runId.slice(0, 4)}:${e.event_type}`));
}

async function projectedSpans(store: Store) {
  const plane = await ControlPlane.open(store, { product: "DEMO" });
  const { state } = await plane.project();
  await plane.close();
  return [...state.values()].filter((r) => r.type === "span" && r.status === "active");
}

/** Record indices covered by the projection's active spans, with multiplicity. */
function coverage(spans: Record<string, unknown>[]): number[] {
  return spans
    .flatMap((s) =>
      ((s.span as { time_index_ranges: [number, number][] }).time_index_ranges ?? []).flatMap(([a, b]) =>
        Array.from({ length: b - a + 1 }, (_, i) => a + i),
      ),
    )
    .sort((a, b) => a - b);
}

describe("the writer under the .firecube control plane", () => {
  it("without the option there is no .firecube directory", async () => {
    const store = new MemoryStore();
    const w = await ZarrStreamWriter.create(store, gridSchema(), { kind: "single" });
    await w.close();
    assert.deepEqual(await store.list(".firecube"), []);
  });

  it("a run records claims, the schema as resolved index, one span per commit, completion; claims released", async () => {
    const store = new MemoryStore();
    const schema = gridSchema({}, true);
    const owner = await ZarrStreamWriter.create(
      store,
      schema,
      { kind: "owner", nWriters: 2 },
      { lat: [0, 2] },
      cp("a"),
    );
    const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] }, cp("b"));
    const plane = await ControlPlane.open(store, { product: "DEMO" });
    const domains = (await plane.listClaims()).map((x) => x.claim.domain).sort();
    assert.deepEqual(domains, [
      'DEMO:zarr_region:root:region={"lat":[0,2]}',
      'DEMO:zarr_region:root:region={"lat":[2,4]}',
      "DEMO:zarr_region:root:schema",
    ]);
    assert.deepEqual(
      Object.values(await plane.verifyResolvedIndex())
        .slice(0, 1)
        .concat((await plane.verifyResolvedIndex()).attrs),
      ["ok", "match"],
    );
    for (let r = 0; r < 4; r++) {
      await owner.writeRecord(r, recordArrays(schema, r, { lat: [0, 2] }));
      await c.writeRecord(
        r,
        recordArrays(schema, r, { lat: [2, 4] }, (_, p) => p),
      );
      if (r % 2 === 1) await owner.commit([await owner.flush(), await c.flush()]);
    }
    const last = await c.flush();
    await c.close();
    await owner.close([last]);
    // The owner's commits rewrite the root's consolidated metadata and keep the index mirrored into its
    // attributes after create.
    assert.equal((await plane.verifyResolvedIndex()).attrs, "match");
    const root = JSON.parse(new TextDecoder().decode(await store.get("zarr.json")));
    assert.equal(root.attributes.title, "test");
    assert.deepEqual(root.consolidated_metadata.metadata.time.shape, [4]);
    assert.deepEqual(await plane.listClaims(), []);
    const ev = await events(store);
    assert.deepEqual(
      ev.map((e) => e.split(":")[1]),
      ["run_started", "index_ensured", "span_committed", "span_committed", "span_committed", "run_completed"],
    );
    assert.deepEqual(coverage(await projectedSpans(store)), [0, 1, 2, 3]);
    await plane.close();
  });

  it("a second process opening the same role or region fails fast with the claim conflict", async () => {
    const store = new MemoryStore();
    const schema = gridSchema({}, true);
    const owner = await ZarrStreamWriter.create(
      store,
      schema,
      { kind: "owner", nWriters: 2 },
      { lat: [0, 2] },
      cp("a"),
    );
    await assert.rejects(
      ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 2 }, { lat: [0, 2] }, undefined, cp("x")),
      (e: unknown) => e instanceof ClaimConflict || (e instanceof Error && /live/.test(e.message)),
    );
    const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] }, cp("b"));
    await assert.rejects(
      ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] }, cp("c")),
      ClaimConflict,
    );
    await owner.close([await c.flush()]);
  });

  it("row 5: a changed schema pointed at an existing store is refused with the field diff", async () => {
    const store = new MemoryStore();
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 }, {}, cp("a"));
    await w.close();
    const changed: StreamSchema = { ...schema, profile: "checkpoint" };
    const err = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 }, {}, undefined, {
      ...cp("a"),
      schema: changed,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ResolvedIndexConflict, `got ${err}`);
    assert.match(JSON.stringify(err.diff), /profile/);
    // the refused resume failed its run and released its claims: a correct resume goes through
    const again = await ZarrStreamWriter.resume(
      store,
      { kind: "owner", nWriters: 1 },
      {},
      undefined,
      cp("a"),
    );
    await again.close();
  });

  it("invalidate appends record_replaced; truncate-on-resume a replacement; projection shows every record once", async () => {
    const store = new MemoryStore();
    const indexed = gridSchema({ time_mode: { indexed: { times: [0, 1, 2, 3] } } });
    const w = await ZarrStreamWriter.create(store, indexed, { kind: "owner", nWriters: 1 }, {}, cp("a"));
    await w.writeRecordAt(1, 1, recordArrays(indexed, 1, {}));
    await w.commit([await w.flush()]);
    await w.invalidate([1]);
    await w.close();
    assert.ok((await events(store)).some((e) => e.endsWith(":record_replaced")));

    const s2 = new MemoryStore();
    const schema = gridSchema();
    const a = await ZarrStreamWriter.create(s2, schema, { kind: "owner", nWriters: 1 }, {}, cp("a"));
    for (let r = 0; r < 6; r++) {
      await a.writeRecord(r, recordArrays(schema, r, {}));
      if (r % 2 === 1) await a.commit([await a.flush()]);
    }
    await a.close();
    const b = await ZarrStreamWriter.resume(s2, { kind: "owner", nWriters: 1 }, {}, 2, cp("a"));
    for (let r = 3; r < 5; r++) await b.writeRecord(r, recordArrays(schema, r, {}));
    await b.close();
    const ev = (await events(s2)).map((e) => e.split(":")[1]);
    assert.ok(ev.includes("run_started_with_replacement"));
    assert.ok(ev.includes("replacement_committed"));
    assert.deepEqual(coverage(await projectedSpans(s2)), [0, 1, 2, 3, 4]);
  });

  it("a writer whose claim recovery cleared stops with ClaimLost before its next commit, writing nothing", async () => {
    const store = new MemoryStore();
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" }, {}, cp("a"));
    await w.writeRecord(1, recordArrays(schema, 0, {}));
    await w.flush();
    const plane = await ControlPlane.open(store, { product: "DEMO" });
    for (const c of await plane.listClaims()) await plane.clearClaim(c.claim.domain, { force: true });
    await plane.close();
    await w.writeRecord(2, recordArrays(schema, 1, {}));
    const before = await store.get("output_manifest.json");
    await assert.rejects(w.flush(), ClaimLost);
    assert.deepEqual(await store.get("output_manifest.json"), before, "no commit after the claim was lost");
    await assert.rejects(w.writeRecord(3, recordArrays(schema, 2, {})), Fenced, "the handle stays stopped");
  });
});

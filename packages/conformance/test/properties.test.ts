import assert from "node:assert/strict";
import { test } from "node:test";
import { CommitError, type CommitToken, type CorpusSchema, RegionNotShardAligned } from "@zarr-stream/spec";
import { MemoryStore, snapshotStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import fc from "fast-check";
import {
  compareDump,
  dumpStore,
  oracleDump,
  recordArraysFor,
  runCase,
  streamSchemaOf,
} from "../src/index.js";
import {
  buildSchema,
  DIM_NAMES,
  guillotine,
  multiWriterCase,
  recordTime,
  regionDimsOf,
  scenarioArb,
  schemaGenArb,
  singleWriterCase,
} from "./scenarios.js";

/** Fixed seed in CI; FC_RUNS raises the run count, FC_SEED replays a reported failure. */
const RUNS = Number(process.env.FC_RUNS ?? 300);
const SEED = Number(process.env.FC_SEED ?? 20261202);
const params = { numRuns: RUNS, seed: SEED, includeErrorInReport: true };

async function mismatches(c: Parameters<typeof runCase>[0]): Promise<string[]> {
  const store = new MemoryStore();
  await runCase(c, store);
  return compareDump(oracleDump(c), await dumpStore(store, c.name));
}

test(`§10 property: 1–16 region writers with commits, crashes and resumes equal one writer and the oracle bitwise (${RUNS} runs)`, async () => {
  await fc.assert(
    fc.asyncProperty(scenarioArb, async (s) => {
      const { c } = multiWriterCase(s);
      const single = singleWriterCase(s);
      const multiDiff = await mismatches(c).catch((e: Error) => [`${e.name}: ${e.message}`]);
      assert.deepEqual(multiDiff, [], `multi-writer case:\n${JSON.stringify(c)}`);
      const singleDiff = await mismatches(single).catch((e: Error) => [`${e.name}: ${e.message}`]);
      assert.deepEqual(singleDiff, [], `single-writer case:\n${JSON.stringify(single)}`);
    }),
    params,
  );
});

const misalignedArb = fc
  .record({
    schema: schemaGenArb,
    dim: fc.nat(2),
    start: fc.integer({ min: -1, max: 9 }),
    stop: fc.integer({ min: -1, max: 10 }),
    join: fc.boolean(),
  })
  .filter(({ schema, dim, start, stop }) => {
    const d = schema.dims[dim % schema.dims.length]!;
    const shard = d.chunk * d.k;
    const aligned =
      0 <= start &&
      start < stop &&
      stop <= d.len &&
      start % shard === 0 &&
      (stop % shard === 0 || stop === d.len);
    return !aligned;
  });

test(`§4 property: any misaligned or out-of-range region is RegionNotShardAligned before any I/O (${RUNS} runs)`, async () => {
  await fc.assert(
    fc.asyncProperty(misalignedArb, async ({ schema: g, dim, start, stop, join }) => {
      const schema = buildSchema(g);
      const name = DIM_NAMES[dim % g.dims.length]!;
      const store = new MemoryStore();
      let before: Map<string, Uint8Array>;
      let attempt: () => Promise<unknown>;
      if (join) {
        await ZarrStreamWriter.create(store, streamSchemaOf(schema), { kind: "owner", nWriters: 2 }, {});
        before = await snapshotStore(store);
        attempt = () =>
          ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { [name]: [start, stop] });
      } else {
        before = await snapshotStore(store);
        attempt = () =>
          ZarrStreamWriter.create(
            store,
            streamSchemaOf(schema),
            { kind: "owner", nWriters: 2 },
            { [name]: [start, stop] },
          );
      }
      await assert.rejects(
        attempt(),
        (err: unknown) => err instanceof RegionNotShardAligned && err.dim === name,
      );
      assert.deepEqual(await snapshotStore(store), before);
    }),
    params,
  );
});

type Mutation =
  | "fingerprint"
  | "t-bit"
  | "drop-record"
  | "extra-record"
  | "duplicate-id"
  | "missing-writer"
  | "gap"
  | "overlap";
const MUTATIONS: Mutation[] = [
  "fingerprint",
  "t-bit",
  "drop-record",
  "extra-record",
  "duplicate-id",
  "missing-writer",
  "gap",
  "overlap",
];

function nextUp(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + 1n);
  return view.getFloat64(0);
}

/** Applies a mutation to a copy of the tokens, or returns undefined when it does not apply to this tiling. */
function mutate(
  tokens: CommitToken[],
  m: Mutation,
  pick: number,
  schema: CorpusSchema,
): CommitToken[] | undefined {
  const out = structuredClone(tokens);
  const victim = out[pick % out.length]!;
  const lengthOf = (d: string) => schema.dims.find(([n]) => n === d)![1];
  switch (m) {
    case "fingerprint": {
      const last = victim.fingerprint.at(-1) === "0" ? "1" : "0";
      victim.fingerprint = victim.fingerprint.slice(0, -1) + last;
      return out;
    }
    // With one writer a changed t (append), a dropped or an extra record is a different but valid commit.
    case "t-bit":
      if (out.length < 2 && schema.time_mode === "append") return undefined;
      victim.records[0]!.t = nextUp(victim.records[0]!.t);
      return out;
    case "drop-record":
      if (out.length < 2) return undefined;
      victim.records.pop();
      return out;
    case "extra-record": {
      if (out.length < 2) return undefined;
      const lastRec = victim.records.at(-1)!;
      const index = lastRec.index + 1;
      const times = schema.time_mode === "append" ? undefined : schema.time_mode.indexed.times;
      if (times && index >= times.length) return undefined;
      victim.records.push({ index, t: times ? times[index]! : lastRec.t + 1 });
      return out;
    }
    case "duplicate-id":
      if (out.length < 2) return undefined;
      out[(pick + 1) % out.length] = structuredClone(victim);
      return out;
    case "missing-writer":
      out.splice(pick % out.length, 1);
      return out;
    case "gap":
    case "overlap": {
      for (const [d, [a, b]] of Object.entries(victim.region)) {
        const s = schema.shard_shape[d]!;
        if (m === "gap" && b - a > s) {
          victim.region[d] = [a, b - (b % s === 0 ? s : b % s)];
          return out;
        }
        if (m === "overlap" && out.length > 1 && (a > 0 || b < lengthOf(d))) {
          victim.region[d] = a > 0 ? [a - s, b] : [a, Math.min(b + s, lengthOf(d))];
          return out;
        }
      }
      return undefined;
    }
  }
}

test(`§5.3 property: a gap, overlap or mutated token is CommitError and the committed state is unchanged (${RUNS} runs)`, async () => {
  const arb = fc.record({ s: scenarioArb, mutation: fc.constantFrom(...MUTATIONS), pick: fc.nat() });
  await fc.assert(
    fc.asyncProperty(arb, async ({ s, mutation, pick }) => {
      const g = { ...s.schema, nRecords: Math.max(2, s.schema.nRecords) };
      const schema = buildSchema(g);
      const regions = guillotine(schema, regionDimsOf(schema, s.regionMask), s.cuts);
      const store = new MemoryStore();
      const writers = [
        await ZarrStreamWriter.create(
          store,
          streamSchemaOf(schema),
          { kind: "owner", nWriters: regions.length },
          regions[0]!,
        ),
      ];
      for (let i = 1; i < regions.length; i++)
        writers.push(await ZarrStreamWriter.join(store, { kind: "contributor", id: i }, regions[i]!));
      const times = schema.time_mode === "append" ? undefined : schema.time_mode.indexed.times;
      const write = async (i: number) => {
        for (const [w, writer] of writers.entries()) {
          const arrays = recordArraysFor(schema, i, regions[w]!, w === 0);
          if (times) await writer.writeRecordAt(i, times[i]!, arrays);
          else await writer.writeRecord(recordTime(g, i), arrays);
        }
      };
      const flushAll = () => Promise.all(writers.map((w) => w.flush()));
      await write(0);
      await writers[0]!.commit(await flushAll());
      await write(1);
      const tokens = await flushAll();
      const bad = mutate(tokens, mutation, pick, schema);
      fc.pre(bad !== undefined);
      const before = await snapshotStore(store);
      const committed = JSON.stringify(await dumpStore(store, "state"));
      await assert.rejects(writers[0]!.commit(bad!), CommitError);
      assert.equal(JSON.stringify(await dumpStore(store, "state")), committed);
      assert.deepEqual(await store.get("output_manifest.json"), before.get("output_manifest.json"));
      // The untouched tokens still commit: the mutation alone was refused.
      const receipt = await writers[0]!.commit(tokens);
      assert.equal(receipt.commit_seq, 2);
    }),
    params,
  );
});

// fencing.md's rule for a job started twice, as a property: two handles of contributor 1 (and, in turn,
// two of the owner) make random interleavings of write, flush, commit and resume with random data,
// identical data included. After every step, every committed record reads exactly what the writer of a
// token that a commit carried wrote for it.
// Seed-fixed in CI; more on demand: FC_RUNS=3000 FC_SEED=… node --test dist/test/duplicate-properties.test.js
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readOutputManifestIfPresent, readRecord } from "@zarr-stream/reader";
import type { CommitToken, StreamSchema } from "@zarr-stream/spec";
import { FsStore, MemoryStore, type Store } from "@zarr-stream/store";
import fc from "fast-check";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";
import { bits } from "./store-locations.js";

const RUNS = Number(process.env.FC_RUNS ?? 300);
const SEED = Number(process.env.FC_SEED ?? 20261205);

const N = 6;
const TIMES = Array.from({ length: N }, (_, i) => 60 * (i + 1));
const SCHEMA: StreamSchema = {
  ...gridSchema({ time_mode: { indexed: { times: TIMES } }, shard_shape: { time: 3, lat: 2, lon: 6 } }),
  vars: [{ name: "temperature", dims: ["time", "lat", "lon"], dtype: "float64" }],
};
const REGIONS = [{ lat: [0, 2] as [number, number] }, { lat: [2, 4] as [number, number] }];
const OWNER = { kind: "owner", nWriters: 2 } as const;
const C1 = { kind: "contributor", id: 1 } as const;

/** Record r's data in writer `id`'s region; variant 0 is shared by every handle (identical data). */
const data = (id: number, r: number, variant: number) =>
  recordArrays(SCHEMA, r + 1000 * variant, REGIONS[id]!);

type Op =
  | { op: "write"; slot: number; record: number; variant: number }
  | { op: "flush"; slot: number }
  | { op: "resume"; slot: number }
  | { op: "commit"; token: number; ownerSlot: number }
  | { op: "resumeOwner"; ownerSlot: number };

const ops: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant("write" as const),
      slot: fc.integer({ min: 0, max: 1 }),
      record: fc.integer({ min: 0, max: N - 1 }),
      variant: fc.integer({ min: 0, max: 2 }),
    }),
    weight: 5,
  },
  {
    arbitrary: fc.record({ op: fc.constant("flush" as const), slot: fc.integer({ min: 0, max: 1 }) }),
    weight: 3,
  },
  {
    arbitrary: fc.record({ op: fc.constant("resume" as const), slot: fc.integer({ min: 0, max: 1 }) }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      op: fc.constant("commit" as const),
      token: fc.nat(),
      ownerSlot: fc.integer({ min: 0, max: 1 }),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      op: fc.constant("resumeOwner" as const),
      ownerSlot: fc.integer({ min: 0, max: 1 }),
    }),
    weight: 1,
  },
);

/** A contributor handle and every data variant it wrote, by record (a handle may rewrite what it has not committed). */
interface Handle {
  writer: ZarrStreamWriter;
  wrote: Map<number, Set<number>>;
}

/** Runs a writer call; refusals (Fenced, CommitError, ProtocolError) are allowed outcomes, the property is about what commits. */
async function attempt<T>(fn: () => Promise<T>): Promise<{ value: T } | undefined> {
  try {
    return { value: await fn() };
  } catch {
    return undefined;
  }
}

async function duplicateCase(store: Store, steps: Op[]): Promise<void> {
  const owners: ZarrStreamWriter[] = [await ZarrStreamWriter.create(store, SCHEMA, OWNER, REGIONS[0])];
  const first: Handle = { writer: await ZarrStreamWriter.join(store, C1, REGIONS[1]), wrote: new Map() };
  const slots: Handle[] = [first, first];
  const flushed: { token: CommitToken; by: Handle }[] = [];
  /** The handle whose token committed each committed record. */
  const committedBy = new Map<number, Handle>();
  for (const step of steps) {
    switch (step.op) {
      case "write": {
        const h = slots[step.slot]!;
        const { record, variant } = step;
        if (await attempt(() => h.writer.writeRecordAt(record, TIMES[record]!, data(1, record, variant)))) {
          if (!h.wrote.has(record)) h.wrote.set(record, new Set());
          h.wrote.get(record)!.add(variant);
        }
        break;
      }
      case "flush": {
        const h = slots[step.slot]!;
        const done = await attempt(() => h.writer.flush());
        if (done) flushed.push({ token: done.value, by: h });
        break;
      }
      case "resume": {
        const done = await attempt(() => ZarrStreamWriter.resume(store, C1, REGIONS[1]));
        if (done) slots[step.slot] = { writer: done.value, wrote: new Map() };
        break;
      }
      case "resumeOwner": {
        const done = await attempt(() => ZarrStreamWriter.resume(store, OWNER, REGIONS[0]));
        if (done) owners[step.ownerSlot] = done.value;
        break;
      }
      case "commit": {
        const o = owners[step.ownerSlot] ?? owners[0]!;
        const f = flushed[step.token % Math.max(1, flushed.length)];
        if (f === undefined) break;
        const own = await attempt(async () => {
          for (const r of f.token.records) await o.writeRecordAt(r.index, r.t, data(0, r.index, 0));
          return o.flush();
        });
        if (own && (await attempt(() => o.commit([own.value, f.token]))))
          for (const r of f.token.records) committedBy.set(r.index, f.by);
        break;
      }
    }
    await assertCommittedAsWritten(store, committedBy);
  }
}

async function assertCommittedAsWritten(store: Store, committedBy: Map<number, Handle>): Promise<void> {
  const m = await readOutputManifestIfPresent(store);
  const entries =
    (m as { records?: { entries: { committed: boolean }[] } } | undefined)?.records?.entries ?? [];
  for (let i = 0; i < entries.length; i++) {
    if (!entries[i]!.committed) continue;
    const by = committedBy.get(i);
    assert.notEqual(by, undefined, `record ${i} is committed, but no commit that succeeded carried it`);
    const all = (await readRecord(store, "temperature", i)).data as Float64Array;
    const own = data(0, i, 0).temperature!;
    assert.equal(bits(all.subarray(0, own.length)), bits(own), `record ${i}, the owner's region`);
    const theirs = bits(all.subarray(own.length));
    const variants = [...(by!.wrote.get(i) ?? [])];
    assert.ok(
      variants.some((v) => bits(data(1, i, v).temperature!) === theirs),
      `record ${i}, writer 1's region: not what the handle whose token committed it wrote (variants ${variants})`,
    );
  }
}

const cases = fc.array(ops, { minLength: 4, maxLength: 24 });

describe("two handles of one writer id, random interleavings", () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it(`MemoryStore: every committed record reads what a committed token's writer wrote (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(cases, (steps) => duplicateCase(new MemoryStore(), steps)),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it(`FsStore: every committed record reads what a committed token's writer wrote (${RUNS} runs)`, async () => {
    const root = mkdtempSync(join(tmpdir(), "zs-dup-"));
    dirs.push(root);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(cases, (steps) => duplicateCase(new FsStore(join(root, `s${n++}`)), steps)),
      { numRuns: RUNS, seed: SEED + 1 },
    );
  });
});

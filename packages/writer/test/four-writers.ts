// The 4-writer StreamRun the fault suites share (proxy-faults, disk-faults): an owner and three
// contributors, one lat row each, a commit every 2 records, 8 records; its uninterrupted outcome; and the
// checks that a faulted run kept every committed record and ended bitwise equal to it.
import assert from "node:assert/strict";
import { MANIFEST_KEY } from "@zarr-stream/reader";
import type { StreamSchema } from "@zarr-stream/spec";
import { MemoryStore, type Store, snapshotStore } from "@zarr-stream/store";
import { LEASE_PREFIX, StreamRun } from "../src/index.js";
import { committedDump, gridSchema, recordArrays } from "./helpers.js";

/** Four writers, one lat row each (a shard is one row): the owner's row 0 and contributors 1-3. */
export const SCHEMA4: StreamSchema = gridSchema({ shard_shape: { time: 2, lat: 1, lon: 6 } });
export const WRITERS = 4;
export const RECORDS = 8;
export const EVERY = 2;
export const rowOf = (id: number): { lat: [number, number] } => ({ lat: [id, id + 1] });
export const t = (r: number) => 60 * (r + 1);

/** Record r of writer `id` (the owner also writes the arrays without a lat axis). */
export const rowArrays = (id: number, r: number, variant = 0) =>
  recordArrays(SCHEMA4, r + 1000 * variant, rowOf(id), (_, partitioned) => partitioned || id === 0);

export function openRun(id: number, store: Store): Promise<StreamRun> {
  return StreamRun.open({
    store,
    id,
    count: WRITERS,
    region: rowOf(id),
    schema: SCHEMA4,
    commitEvery: EVERY,
    pollMs: 5,
    timeoutMs: 30_000,
    env: {},
  });
}

/** The uninterrupted run: four writers concurrently on one MemoryStore. */
export async function referenceRun(): Promise<Store> {
  const store = new MemoryStore();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, id) => {
      const run = await openRun(id, store);
      for (let r = run.nextRecord; r < RECORDS; r++) await run.write(t(r), rowArrays(id, r));
      await run.close();
    }),
  );
  return store;
}

/**
 * Every object of `store` against `reference`, the same keys and the same bytes, except what differs
 * between two runs by design:
 * - the leases: each holds its handle's nonce and the time it was taken, and seals tokens whose
 *   fingerprint names the run;
 * - the manifest's `created_at`, `base_url` and `fingerprint` (the time of the create or of an owner's
 *   restamp, the store's URL, and what they hash), compared with every other byte of the manifest;
 * - a trailing newline of a `zarr.json`: an owner's resume toggles it on the time-axis arrays' and the
 *   root's documents so that their versions change and a zombie's conditional write is refused
 *   (fencing.md, "Zombie owners"), and only the next shape rewrite drops it again; an owner restarted
 *   after the run's last growing commit leaves it. No JSON reader sees it.
 * Returns how many objects were compared, and how many of them differed by that newline only.
 */
export async function assertSameObjects(
  store: Store,
  reference: Store,
): Promise<{ compared: number; toggled: number }> {
  const [got, want] = await Promise.all([snapshotStore(store), snapshotStore(reference)]);
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), "the same objects");
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  const normal = (b: Uint8Array) =>
    text(b).replace(/"(created_at|base_url|fingerprint)": "[^"]*"/g, '"$1": "…"');
  let compared = 0;
  let toggled = 0;
  for (const [key, bytes] of want) {
    if (key.startsWith(LEASE_PREFIX)) continue;
    const mine = got.get(key)!;
    compared++;
    if (key === MANIFEST_KEY) assert.equal(normal(mine), normal(bytes), "the manifest");
    else if (!Buffer.from(mine).equals(Buffer.from(bytes))) {
      const [a, b] = [text(mine), text(bytes)];
      const newline = key.endsWith("zarr.json") && (a === `${b}\n` || b === `${a}\n`);
      assert.ok(newline, `${key} differs`);
      toggled++;
    }
  }
  return { compared, toggled };
}

/** The committed records, one entry per record and variable with its values (committedDump's rows). */
export async function committedRows(store: Store): Promise<unknown[]> {
  return (JSON.parse(await committedDump(store)) as unknown[]).slice(2);
}

/** Every committed record of `before` is still committed, with the same values. */
export async function assertKept(store: Store, before: unknown[]): Promise<void> {
  const now = await committedRows(store);
  assert.ok(now.length >= before.length, `committed rows went from ${before.length} to ${now.length}`);
  assert.deepEqual(now.slice(0, before.length), before, "a committed record changed");
}

export interface SteppedRun {
  /** A new store object on the run's location (each writer process opens its own). */
  store: () => Store;
  /** Before writer `id`'s step of `round` (0: its open, RECORDS / EVERY + 1: its close). */
  beforeStep?: (id: number, round: number) => void;
  /**
   * A step threw `err`: checks it, and returns once the writer may be restarted (after freeing space,
   * say). Committed records are compared before and after the step by the driver.
   */
  failed: (id: number, round: number, err: unknown) => Promise<void>;
  /** Runs the driver's own reads of the store (default: as they are). */
  quiet?: <T>(read: () => Promise<T>) => Promise<T>;
}

/**
 * Drives the four writers in one process, round by round: contributors 1-3 write the round's records
 * (posting their tokens), then the owner (collecting them and committing). A step that throws is checked
 * (`failed`, and no committed record lost or changed); the writer is then restarted, as a new process of
 * that id, which resumes, and goes on from its nextRecord. Returns the restarts, as [id, round].
 */
export async function steppedRun(o: SteppedRun): Promise<[number, number][]> {
  const quiet = o.quiet ?? ((read) => read());
  const runs: (StreamRun | undefined)[] = [];
  const restarts: [number, number][] = [];
  const step = async (id: number, round: number, work: (run: StreamRun) => Promise<void>) => {
    o.beforeStep?.(id, round);
    for (let attempt = 1; ; attempt++) {
      const before = await quiet(() => committedRowsIfAny(o.store()));
      try {
        runs[id] ??= await openRun(id, o.store());
        await work(runs[id]);
        return;
      } catch (err) {
        if (attempt >= 3) throw err;
        await o.failed(id, round, err);
        await quiet(() => assertKeptIfAny(o.store(), before));
        runs[id] = undefined;
        restarts.push([id, round]);
      }
    }
  };
  for (let id = 0; id < WRITERS; id++) await step(id, 0, async () => {});
  const rounds = RECORDS / EVERY;
  const order = [1, 2, 3, 0];
  for (let round = 1; round <= rounds; round++) {
    for (const id of order) {
      await step(id, round, async (run) => {
        for (let r = run.nextRecord; r < EVERY * round; r++) await run.write(t(r), rowArrays(id, r));
      });
    }
  }
  for (const id of order) await step(id, rounds + 1, (run) => run.close());
  return restarts;
}

async function committedRowsIfAny(store: Store): Promise<unknown[]> {
  return (await store.size(MANIFEST_KEY)) === undefined ? [] : committedRows(store);
}

async function assertKeptIfAny(store: Store, before: unknown[]): Promise<void> {
  if (before.length > 0) await assertKept(store, before);
}

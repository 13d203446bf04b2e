// Fenced writes, beyond the nine failure cases: interleavings the rule of fencing.md must also survive ("exactly one
// handle goes on, and no committed byte changes unless a commit that succeeds publishes it"):
// - an owner takeover (resume) while the old owner's commit is in flight: fencing.md accepts that such a
//   commit may still succeed, and says the resumed owner's first commit is then refused; whichever wins,
//   every committed record must still read the bytes of the commit that published it, and the time
//   coordinate and shapes must agree with the manifest;
// - indexed mode, where written time shards are released and reloaded: a zombie writing a record its
//   successor committed must be Fenced without changing it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MANIFEST_KEY,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readRecord,
} from "@zarr-stream/reader";
import { Fenced } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";
import { bits, storeLocations } from "./store-locations.js";
import { writeGate } from "./write-gate.js";

const { s3Skip: skip, backends } = storeLocations("t");

const SCHEMA = gridSchema();
const OWNER1 = { kind: "owner", nWriters: 1 } as const;

async function settle(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return err;
  }
}

/**
 * The store agrees with itself: the time coordinate ends at last_t, every committed record reads the
 * values of the writer whose t it carries (tOf maps a committed t to the generator record written with
 * it), and every time-axis array's shape is n_records.
 */
async function assertConsistent(store: Store, recordOfT: Map<number, number>): Promise<void> {
  const m = await readOutputManifest(store);
  const count = m.n_records;
  // the time coordinate's values (read past a shape that may lag: the shape is checked last)
  const layout = await readArrayLayout(store, "time");
  const wide = { ...layout, shape: [Math.max(count, layout.shape[0]!)] };
  const times = [...((await readArrayRegion(store, "time", wide, [[0, count]])) as Float64Array)];
  assert.equal(times[count - 1], m.last_t, `time[${count - 1}] is the manifest's last_t`);
  for (let i = 0; i < count; i++) {
    const r = recordOfT.get(times[i]!);
    assert.ok(r !== undefined, `record ${i} has t ${times[i]}, which no writer wrote`);
    const want = recordArrays(SCHEMA, r, {});
    for (const v of SCHEMA.vars) {
      const got = await readRecord(store, v.name, i, undefined, { manifest: m });
      assert.equal(bits(got.data), bits(want[v.name]!), `${v.name} of committed record ${i} (t ${times[i]})`);
    }
  }
  for (const name of ["time", ...SCHEMA.vars.map((v) => v.name)]) {
    const doc = JSON.parse(new TextDecoder().decode(await store.get(`${name}/zarr.json`))) as {
      shape: number[];
    };
    assert.equal(doc.shape[0], count, `${name}/zarr.json shape agrees with n_records ${count}`);
  }
}

/**
 * Owner A of a new store: record 0 committed (t 10, values of record 0), record 1 (t 20, values of
 * record 1) flushed and its commit started, held just before its write of `key` reaches the store.
 */
async function commitOnTheWire(at: () => Store, key: string) {
  const gate = writeGate(at(), (k) => k === key);
  const a = await ZarrStreamWriter.create(gate.store, SCHEMA, OWNER1);
  await a.writeRecord(10, recordArrays(SCHEMA, 0, {}));
  await a.commit([await a.flush()]);
  await a.writeRecord(20, recordArrays(SCHEMA, 1, {}));
  const token = await a.flush();
  gate.hold();
  const aCommit = settle(a.commit([token]));
  await gate.reached;
  return { gate, aCommit };
}

for (const [backend, location] of backends) {
  describe(
    `owner takeover during a commit on ${backend}`,
    { skip: backend === "S3Store" ? skip : undefined },
    () => {
      it("the old owner's in-flight commit and the new owner's writes leave every committed record consistent", async () => {
        const at = location();
        // A's commit passes its lease check and its manifest PUT is on the wire ...
        const { gate, aCommit } = await commitOnTheWire(at, MANIFEST_KEY);
        // ... when B resumes the store (its lease fences A from now on)
        const b = await ZarrStreamWriter.resume(at(), OWNER1);
        gate.release();
        const aOutcome = await aCommit;
        // B writes its own record after what it saw committed (t 25, values of record 77) and commits
        const bOutcome = await settle(
          (async () => {
            await b.writeRecord(25, recordArrays(SCHEMA, 77, {}));
            await b.commit([await b.flush()]);
          })(),
        );
        const m = await readOutputManifest(at());
        const note = `A's commit: ${aOutcome ?? "ok"}; B's: ${bOutcome ?? "ok"}; manifest n_records ${m.n_records}, last_t ${m.last_t}`;
        assert.ok(aOutcome === undefined || bOutcome === undefined || m.n_records === 1, note);
        await assertConsistent(
          at(),
          new Map([
            [10, 0],
            [20, 1],
            [25, 77],
          ]),
        ).catch((err: Error) => {
          err.message = `${err.message}\n(${note})`;
          throw err;
        });
      });

      it("a zombie owner's shape write held across a takeover is refused: shapes and consolidated root stay committed", async () => {
        const at = location();
        // A's lease and manifest checks pass; its time/zarr.json write (shape 2) is on the wire ...
        const { gate, aCommit } = await commitOnTheWire(at, "time/zarr.json");
        // ... when B resumes. The committed shape is 1 already, yet B rewrites time/zarr.json (its bytes
        // changed: on S3 identical bytes keep their ETag), so A's write conditional on the old version is
        // refused and A is Fenced before its manifest write.
        await ZarrStreamWriter.resume(at(), OWNER1);
        gate.release();
        assert.ok((await aCommit) instanceof Fenced, `A's commit: ${await aCommit}`);
        const store = at();
        assert.equal((await readOutputManifest(store)).n_records, 1);
        await assertConsistent(store, new Map([[10, 0]]));
        const root = JSON.parse(new TextDecoder().decode(await store.get("zarr.json")));
        for (const name of ["time", ...SCHEMA.vars.map((v) => v.name)])
          assert.equal(root.consolidated_metadata.metadata[name].shape[0], 1, `consolidated ${name}`);
      });

      it("a v1 store's first commit in flight while a resume with the schema lays the store out again", async () => {
        const at = location();
        const gate = writeGate(at(), (key) => key === MANIFEST_KEY);
        const single = { kind: "single" } as const;
        // A: a v1 Single store; its first flush (records 0 and 1) is on the wire with its manifest ...
        const a = await ZarrStreamWriter.create(gate.store, SCHEMA, single);
        await a.writeRecord(10, recordArrays(SCHEMA, 0, {}));
        await a.writeRecord(20, recordArrays(SCHEMA, 1, {}));
        gate.hold();
        const aFlush = settle(a.flush());
        await gate.reached;
        // ... when B, seeing no manifest, resumes with the schema
        const b = await ZarrStreamWriter.resume(at(), single, {}, undefined, { schema: SCHEMA });
        gate.release();
        const aOutcome = await aFlush;
        const bOutcome = await settle(
          (async () => {
            await b.writeRecord(15, recordArrays(SCHEMA, 55, {}));
            await b.flush();
          })(),
        );
        const m = await readOutputManifest(at());
        const note = `A's flush: ${aOutcome ?? "ok"}; B's: ${bOutcome ?? "ok"}; manifest n_records ${m.n_records}, last_t ${m.last_t}`;
        await assertConsistent(
          at(),
          new Map([
            [10, 0],
            [20, 1],
            [15, 55],
          ]),
        ).catch((err: Error) => {
          err.message = `${err.message}\n(${note})`;
          throw err;
        });
      });

      it("indexed mode: a zombie owner writing a record its successor committed is Fenced and changes nothing", async () => {
        const at = location();
        const times = [0, 60, 120, 180];
        const schema = gridSchema({ time_mode: { indexed: { times } } });
        const a = await ZarrStreamWriter.create(at(), schema, OWNER1);
        await a.writeRecordAt(0, 0, recordArrays(schema, 0, {}));
        await a.commit([await a.flush()]);
        // preempted: B resumes, writes record 1 (time shard 0, beside record 0) and commits it
        const b = await ZarrStreamWriter.resume(at(), OWNER1);
        await b.writeRecordAt(1, 60, recordArrays(schema, 1, {}));
        await b.commit([await b.flush()]);
        // the zombie, whose view says record 1 is not committed, writes it
        const err = await settle(
          (async () => {
            await a.writeRecordAt(1, 60, recordArrays(schema, 99, {}));
            await a.commit([await a.flush()]);
          })(),
        );
        for (const [i, r] of [
          [0, 0],
          [1, 1],
        ] as const) {
          const want = recordArrays(schema, r, {});
          for (const v of schema.vars) {
            const got = await readRecord(at(), v.name, i);
            assert.equal(
              bits(got.data),
              bits(want[v.name]!),
              `${v.name} of committed record ${i} (the zombie's write and commit: ${err ?? "ok"})`,
            );
          }
        }
        assert.ok(err instanceof Fenced, `the zombie owner must be Fenced, got ${err}`);
      });

      it("indexed mode: a zombie contributor writing a record its successor committed is Fenced and changes nothing", async () => {
        const at = location();
        const times = [0, 60, 120, 180];
        const schema = gridSchema({ time_mode: { indexed: { times } } });
        const upper = { lat: [0, 2] as [number, number] };
        const lower = { lat: [2, 4] as [number, number] };
        const part = (r: number) => recordArrays(schema, r, lower, (_, p) => p);
        const owner = await ZarrStreamWriter.create(at(), schema, { kind: "owner", nWriters: 2 }, upper);
        const c = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, lower);
        await owner.writeRecordAt(0, 0, recordArrays(schema, 0, upper));
        await c.writeRecordAt(0, 0, part(0));
        await owner.commit([await owner.flush(), await c.flush()]);
        // preempted: C' resumes as contributor 1, writes record 1 (time shard 0) and the owner commits it
        const next = await ZarrStreamWriter.resume(at(), { kind: "contributor", id: 1 }, lower);
        await owner.writeRecordAt(1, 60, recordArrays(schema, 1, upper));
        await next.writeRecordAt(1, 60, part(1));
        await owner.commit([await owner.flush(), await next.flush()]);
        // the zombie contributor, whose view says record 1 is not committed, writes it and flushes
        const err = await settle(
          (async () => {
            await c.writeRecordAt(1, 60, part(99));
            await c.flush();
          })(),
        );
        for (const i of [0, 1]) {
          const want = recordArrays(schema, i, {});
          for (const v of schema.vars) {
            const got = await readRecord(at(), v.name, i);
            assert.equal(
              bits(got.data),
              bits(want[v.name]!),
              `${v.name} of committed record ${i} (the zombie's write and flush: ${err ?? "ok"})`,
            );
          }
        }
        assert.ok(err instanceof Fenced, `the zombie contributor must be Fenced, got ${err}`);
      });
    },
  );
}

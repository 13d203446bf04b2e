// Issue #16, beyond its nine cases: an owner takeover (resume) while the old owner's commit is in flight.
// fencing.md accepts that such a commit may still succeed ("the resumed owner's first commit is then
// refused ... No committed byte is lost or changed without a commit"). These tests hold the writer to
// that rule: whichever commit wins, every committed record must read the bytes of the commit that
// published it, and the time coordinate must agree with the manifest's last_t.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  MANIFEST_KEY,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readRecord,
} from "@zarr-stream/reader";
import type { TypedArray } from "@zarr-stream/spec";
import { FsStore, type Store } from "@zarr-stream/store";
import { type S3Server, s3SkipReason, startS3Server } from "@zarr-stream/store/test/s3-server";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";

const skip = s3SkipReason();
const tmp = mkdtempSync(join(tmpdir(), "zs-takeover-"));
let server: S3Server | undefined;
let n = 0;
const opened: Store[] = [];

before(async () => {
  if (skip !== undefined) return;
  server = await startS3Server();
  await server.makeBucket();
});
after(async () => {
  for (const s of opened) await (s as { close?: () => Promise<void> }).close?.();
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

type Location = () => Store;
const backends: [string, () => Location][] = [
  [
    "FsStore",
    () => {
      const root = join(tmp, `t-${n++}`);
      return () => new FsStore(root);
    },
  ],
  [
    "S3Store",
    () => {
      const prefix = `t-${n++}`;
      return () => {
        const s = server!.store({ prefix });
        opened.push(s);
        return s;
      };
    },
  ],
];

const SCHEMA = gridSchema();
const OWNER1 = { kind: "owner", nWriters: 1 } as const;
const bits = (a: TypedArray) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("hex");

/**
 * A store that delegates every call and, once `hold()` is called, stops the next write of
 * output_manifest.json just before it reaches the store (`reached` resolves) until `release()`: a commit
 * whose lease check has passed and whose manifest PUT is on the wire.
 */
function manifestGate(inner: Store) {
  let holding = false;
  let onReached = () => {};
  let onRelease = () => {};
  const reached = new Promise<void>((r) => {
    onReached = r;
  });
  const released = new Promise<void>((r) => {
    onRelease = r;
  });
  const gate = async <T>(key: string, write: () => Promise<T>): Promise<T> => {
    if (key === MANIFEST_KEY && holding) {
      holding = false;
      onReached();
      await released;
    }
    return write();
  };
  const store: Store = {
    url: inner.url,
    get: (k) => inner.get(k),
    getRange: (k, o, len) => inner.getRange(k, o, len),
    getSuffix: (k, len) => inner.getSuffix(k, len),
    size: (k) => inner.size(k),
    put: (k, b) => gate(k, () => inner.put(k, b)),
    putIfAbsent: (k, b) => gate(k, () => inner.putIfAbsent(k, b)),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
    getVersioned: (k) => inner.getVersioned!(k),
    version: (k) => inner.version!(k),
    putIfVersion: (k, b, v) => gate(k, () => inner.putIfVersion!(k, b, v)),
  };
  return {
    store,
    reached,
    hold() {
      holding = true;
    },
    release: () => onRelease(),
  };
}

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

for (const [backend, location] of backends) {
  describe(
    `owner takeover during a commit on ${backend}`,
    { skip: backend === "S3Store" ? skip : undefined },
    () => {
      it("the old owner's in-flight commit and the new owner's writes leave every committed record consistent", async () => {
        const at = location();
        const gate = manifestGate(at());
        // A: record 0 committed (t 10, values of record 0); record 1 (t 20, values of record 1) flushed
        const a = await ZarrStreamWriter.create(gate.store, SCHEMA, OWNER1);
        await a.writeRecord(10, recordArrays(SCHEMA, 0, {}));
        await a.commit([await a.flush()]);
        await a.writeRecord(20, recordArrays(SCHEMA, 1, {}));
        const token = await a.flush();
        // A's commit passes its lease check and its manifest PUT is on the wire ...
        gate.hold();
        const aCommit = settle(a.commit([token]));
        await gate.reached;
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

      it("a v1 store's first commit in flight while a resume with the schema lays the store out again", async () => {
        const at = location();
        const gate = manifestGate(at());
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
    },
  );
}

// Fenced writes: zombie writers as separate OS processes. A writer process is frozen (SIGSTOP) after it has
// committed, a successor process resumes its role and commits, then the zombie is thawed (SIGCONT) and
// writes on: it must be Fenced, and the store must hold exactly what the successor committed. Once for a
// zombie owner, once for a zombie contributor, on an FsStore and on an S3Store (moto on loopback).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { readArrayLayout, readArrayRegion, readOutputManifest, readRecord } from "@zarr-stream/reader";
import type { CommitToken, OutputManifestV2, TypedArray } from "@zarr-stream/spec";
import { FsStore, S3Store, type Store } from "@zarr-stream/store";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, recordArrays } from "./helpers.js";
import { okValue, type Repl, type Reply, startRepl } from "./writer-repl.js";

const skip = s3ServerSkipReason("moto");
const tmp = mkdtempSync(join(tmpdir(), "zs-zombies-"));
let server: S3Server<S3Store> | undefined;
let bucket = "";
let n = 0;
const opened: Store[] = [];

before(async () => {
  if (skip !== undefined) return;
  server = await startS3Server("moto", (o) => new S3Store(o));
  bucket = await server.makeBucket();
});
after(async () => {
  for (const s of opened) await (s as { close?: () => Promise<void> }).close?.();
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

interface Location {
  url: string;
  open(): Store;
  env: Record<string, string>;
}

const backends: [string, () => Location][] = [
  [
    "FsStore",
    () => {
      const root = join(tmp, `z-${n++}`);
      return { url: pathToFileURL(root).href, open: () => new FsStore(root), env: {} };
    },
  ],
  [
    "S3Store",
    () => {
      const prefix = `z-${n++}`;
      return {
        url: `s3://${bucket}/${prefix}`,
        open: () => {
          const s = server!.store({ prefix });
          opened.push(s);
          return s;
        },
        env: server!.env,
      };
    },
  ],
];

const SCHEMA = gridSchema();
const OWNER1 = JSON.stringify({ kind: "owner", nWriters: 1 });
const C1 = JSON.stringify({ kind: "contributor", id: 1 });
const LOWER = { lat: [2, 4] as [number, number] };
const UPPER = { lat: [0, 2] as [number, number] };

const bits = (a: TypedArray) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("hex");

/** Every variable of committed record `i` reads the generator values of record `r`, bitwise. */
async function assertRecordIs(store: Store, i: number, r: number): Promise<void> {
  const want = recordArrays(SCHEMA, r, {});
  for (const v of SCHEMA.vars) {
    const got = await readRecord(store, v.name, i);
    assert.equal(bits(got.data), bits(want[v.name]!), `${v.name} of record ${i} holds record ${r}'s values`);
  }
}

async function committedTimes(store: Store, count: number): Promise<number[]> {
  const layout = await readArrayLayout(store, "time");
  return [...((await readArrayRegion(store, "time", layout, [[0, count]])) as Float64Array)];
}

/** The zombie writes one record and flushes (owner: and commits): the first refusal, or the last reply. */
async function zombieWrites(z: Repl, t: number, r: number, then: string): Promise<Reply> {
  const wrote = await z.send(`write ${t} ${r}`);
  return wrote.ok ? z.send(then) : wrote;
}

function assertFenced(reply: Reply, what: string): void {
  assert.ok(!reply.ok, `${what} succeeded`);
  assert.equal(reply.name, "Fenced", `${what}: ${reply.name}: ${reply.message}`);
}

for (const [backend, location] of backends) {
  describe(`zombie processes on ${backend}`, { skip: backend === "S3Store" ? skip : undefined }, () => {
    it("a zombie owner process is Fenced; the store holds what its successor committed", async () => {
      const at = location();
      const [a, b] = await Promise.all([startRepl(at.env), startRepl(at.env)]);
      try {
        okValue(await a.send(`open ${at.url} create ${OWNER1} {}`), "A create");
        okValue(await a.send("write 10 0"), "A write");
        okValue(await a.send("commit []"), "A commit");
        a.pause();
        // preempted: B resumes the store, writes record 1 and commits
        assert.equal(okValue(await b.send(`open ${at.url} resume ${OWNER1} {}`), "B resume"), 1);
        okValue(await b.send("write 20 1"), "B write");
        okValue(await b.send("commit []"), "B commit");
        // the zombie comes back, writes its own record 1 and commits
        a.cont();
        const zombie = await zombieWrites(a, 25, 99, "commit []");
        // first what the zombie did to the store, then how it was told
        const store = at.open();
        const m = (await readOutputManifest(store)) as OutputManifestV2;
        assert.deepEqual([m.n_records, m.last_t], [2, 20]);
        await assertRecordIs(store, 0, 0);
        await assertRecordIs(store, 1, 1);
        assert.deepEqual(await committedTimes(store, 2), [10, 20]);
        assertFenced(zombie, "the zombie owner's write and commit");
        assertFenced(await a.send("write 30 2"), "a later write of the zombie owner");
        // the successor goes on
        okValue(await b.send("write 30 2"), "B write");
        okValue(await b.send("commit []"), "B commit");
        await assertRecordIs(at.open(), 2, 2);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
    });

    it("a zombie contributor process is Fenced; the owner commits its successor's data", async () => {
      const at = location();
      const owner = await ZarrStreamWriter.create(at.open(), SCHEMA, { kind: "owner", nWriters: 2 }, UPPER);
      const [c, next] = await Promise.all([startRepl(at.env), startRepl(at.env)]);
      try {
        okValue(await c.send(`open ${at.url} join ${C1} ${JSON.stringify(LOWER)}`), "C1 join");
        okValue(await c.send("write 10 0"), "C1 write");
        const t0 = okValue<CommitToken>(await c.send("flush"), "C1 flush");
        await owner.writeRecord(10, recordArrays(SCHEMA, 0, UPPER));
        await owner.commit([await owner.flush(), t0]);
        c.pause();
        // preempted: C1' resumes as contributor 1, writes record 1 and flushes
        assert.equal(
          okValue(await next.send(`open ${at.url} resume ${C1} ${JSON.stringify(LOWER)}`), "C1' resume"),
          1,
        );
        okValue(await next.send("write 20 1"), "C1' write");
        const t1 = okValue<CommitToken>(await next.send("flush"), "C1' flush");
        // the zombie comes back and writes its own record 1 over the same shard
        c.cont();
        const zombie = await zombieWrites(c, 20, 99, "flush");
        // the owner commits the successor's token: the store holds the successor's values
        await owner.writeRecord(20, recordArrays(SCHEMA, 1, UPPER));
        await owner.commit([await owner.flush(), t1]);
        const store = at.open();
        assert.equal((await readOutputManifest(store)).n_records, 2);
        await assertRecordIs(store, 0, 0);
        await assertRecordIs(store, 1, 1);
        assert.deepEqual(await committedTimes(store, 2), [10, 20]);
        assertFenced(zombie, "the zombie contributor's write and flush");
        assertFenced(await c.send("flush"), "a later flush of the zombie contributor");
      } finally {
        await Promise.all([c.stop(), next.stop()]);
      }
    });
  });
}

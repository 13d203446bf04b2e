// The writer behind the fault-injecting S3 proxy (test-support/fault-proxy), on moto and versitygw. Every
// machine reaches the server through a proxy of its own, as over its own network path. Faults a retry
// heals (500, 503, resets before the headers, cut bodies, delays, lost acknowledgements) leave what a
// fault-free run leaves, bitwise; the rest end the call with a named error, nothing committed is lost or
// changed, and retrying the call or restarting the writer finishes the run as if nothing had happened.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { MANIFEST_KEY, readOutputManifest } from "@zarr-stream/reader";
import { CommitError, Fenced, StoreError, StoreExists } from "@zarr-stream/spec";
import { MemoryStore, S3Store, type Store } from "@zarr-stream/store";
import {
  type FaultProxy,
  faultEvery,
  HEALABLE_FAULTS,
  type ProxyRule,
  startFaultProxy,
} from "@zarr-stream/test-support/fault-proxy";
import {
  S3_SERVER_KINDS,
  type S3Server,
  s3ServerSkipReason,
  startS3Server,
} from "@zarr-stream/test-support/s3-server";
import { LEASE_PREFIX, StreamRun, ZarrStreamWriter } from "../src/index.js";
import {
  assertKept,
  assertSameObjects,
  committedRows,
  EVERY,
  openRun,
  RECORDS,
  referenceRun,
  rowArrays,
  SCHEMA4,
  t,
  WRITERS,
} from "./four-writers.js";
import { committedDump, gridSchema, recordArrays } from "./helpers.js";

const SCHEMA1 = gridSchema();
const OWNER1 = { kind: "owner", nWriters: 1 } as const;
/** A healable fault on every this-many-th request of each proxy. */
const DRIZZLE = 7;

/** The store key a proxied request names, or undefined for a request on the bucket (a list). */
function keyOf(path: string, prefix: string): string | undefined {
  const p = decodeURIComponent(path.split("?")[0]!);
  const at = p.indexOf(`/${prefix}/`);
  return at < 0 ? undefined : p.slice(at + prefix.length + 2);
}

/** Runs `fn` and returns what it threw (undefined when it succeeded). */
async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
    return undefined;
  } catch (err) {
    return err;
  }
}

for (const kind of S3_SERVER_KINDS) {
  describe(`the writer behind a fault proxy, ${kind}`, { skip: s3ServerSkipReason(kind) }, () => {
    let server: S3Server<S3Store>;
    let reference: Store;
    const proxies: FaultProxy[] = [];
    const stores: S3Store[] = [];
    let prefixes = 0;

    before(async () => {
      server = await startS3Server(kind, (o) => new S3Store(o));
      await server.makeBucket();
      reference = await referenceRun();
    });
    after(async () => {
      for (const s of stores) await s.close();
      for (const p of proxies) await p.close();
      await server?.stop();
    });

    /** A fresh prefix: a store straight to the server (for the checks) and machines behind proxies. */
    const location = () => {
      const prefix = `pf-${prefixes++}`;
      const track = (s: S3Store) => {
        stores.push(s);
        return s;
      };
      return {
        prefix,
        direct: () => track(server.store({ prefix })),
        /** A machine: its own proxy, with `rules` and a drizzle of healable faults, and its store maker. */
        machine: async (...rules: ProxyRule[]) => {
          const proxy = await startFaultProxy(server.endpoint);
          proxies.push(proxy);
          proxy.script(...rules, ...faultEvery(DRIZZLE, HEALABLE_FAULTS));
          return {
            proxy,
            store: () => track(server.store({ prefix, endpoint: proxy.endpoint, deadlineMs: 20_000 })),
          };
        },
      };
    };
    /** A rule for requests of `method` on store key `key` (of the location's prefix). */
    const on =
      (prefix: string, method: string, key: (k: string) => boolean) =>
      (r: { method: string; path: string }) => {
        const k = keyOf(r.path, prefix);
        return r.method === method && k !== undefined && key(k);
      };
    const faulted = (...ps: { proxy: FaultProxy }[]) =>
      ps.reduce((n, p) => n + p.proxy.seen.filter((r) => r.fault !== undefined).length, 0);

    it("a zombie owner: its commit whose every acknowledgement is lost is a StoreError and stays committed; the resumed owner goes on from it and the zombie is Fenced", async (tc) => {
      const at = location();
      const lostManifest: ProxyRule = {
        match: on(at.prefix, "PUT", (k) => k === MANIFEST_KEY),
        fault: { kind: "lose-ack" },
        times: 0,
      };
      const zombie = await at.machine(lostManifest);
      const successor = await at.machine();
      const z = await ZarrStreamWriter.create(zombie.store(), SCHEMA1, OWNER1);
      await z.writeRecord(t(0), recordArrays(SCHEMA1, 0, {}));
      await z.commit([await z.flush()]);
      await z.writeRecord(t(1), recordArrays(SCHEMA1, 1, {}));
      const token = await z.flush();
      const before = await committedRows(at.direct());
      // Every attempt of the SDK (5) lands and loses its answer: no retry can tell the zombie it committed.
      lostManifest.times = 5;
      zombie.proxy.script(lostManifest);
      const lost = await thrown(() => z.commit([token]));
      assert.ok(lost instanceof StoreError && !(lost instanceof Fenced), `a StoreError, got ${lost}`);
      await assertKept(at.direct(), before);
      assert.equal((await readOutputManifest(at.direct())).n_records, 2, "the commit landed");
      // The successor resumes from what landed and commits record 2.
      const s = await ZarrStreamWriter.resume(successor.store(), OWNER1);
      assert.equal(s.committedCount, 2);
      await s.writeRecord(t(2), recordArrays(SCHEMA1, 2, {}));
      await s.commit([await s.flush()]);
      const committed = await at.direct().get(MANIFEST_KEY);
      // The zombie writes its own record 2 and commits: Fenced, and the manifest is the successor's.
      const err = await thrown(async () => {
        await z.writeRecord(t(2), recordArrays(SCHEMA1, 99, {}));
        await z.commit([await z.flush()]);
      });
      // Fenced at its flush, or at its commit, which finds the manifest it could not settle changed
      // (fencing.md, "Failure atomicity"): either way the handle is fenced for good.
      assert.ok(
        err instanceof Fenced || (err instanceof CommitError && err.reason === "concurrent-owner"),
        `the zombie is Fenced, got ${err}`,
      );
      await assert.rejects(z.writeRecord(t(3), recordArrays(SCHEMA1, 98, {})), Fenced);
      assert.deepEqual(await at.direct().get(MANIFEST_KEY), committed, "the zombie changed no manifest");
      await s.writeRecord(t(3), recordArrays(SCHEMA1, 3, {}));
      await s.close();
      const clean = new MemoryStore();
      const u = await ZarrStreamWriter.create(clean, SCHEMA1, OWNER1);
      for (let r = 0; r < 4; r++) await u.writeRecord(t(r), recordArrays(SCHEMA1, r, {}));
      await u.close();
      assert.equal(await committedDump(at.direct()), await committedDump(clean));
      tc.diagnostic(`${faulted(zombie, successor)} faults injected`);
    });

    it("eight racing creates, each one's lease write losing its answer (and half of them then answered 503): exactly one wins, seven get StoreExists", async (tc) => {
      const at = location();
      const leasePut = on(at.prefix, "PUT", (k) => k.startsWith(LEASE_PREFIX));
      // The winner's create-only lease write lands and its answer is lost; its retry is refused by its own
      // write. Each loser's refusal is lost too, and its retry refused again.
      const racers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          at.machine(
            { match: leasePut, fault: { kind: "lose-ack" } },
            ...(i % 2 === 1
              ? [{ match: leasePut, fault: { kind: "status", status: 503 } } as ProxyRule]
              : []),
          ),
        ),
      );
      const results = await Promise.allSettled(
        racers.map((m) => ZarrStreamWriter.create(m.store(), SCHEMA1, { kind: "single" })),
      );
      const won = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      const lost = results.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
      assert.equal(won.length, 1, `${won.length} of 8 creates succeeded: ${lost.join("; ")}`);
      for (const e of lost) assert.ok(e instanceof StoreExists, `a loser got ${e}`);
      await won[0]!.writeRecord(t(0), recordArrays(SCHEMA1, 0, {}));
      await won[0]!.close();
      assert.equal((await readOutputManifest(at.direct())).n_records, 1);
      assert.deepEqual(await at.direct().list(LEASE_PREFIX), [`${LEASE_PREFIX}writer-0.json`]);
      for (const m of racers)
        assert.ok(
          m.proxy.seen.some((r) => r.fault === "lose-ack" && leasePut(r)),
          "every lease write lost its answer",
        );
      tc.diagnostic(`${faulted(...racers)} faults injected`);
    });

    it("a contributor started twice, lease writes and token posts losing their answers: the newer handle takes over, the older is Fenced, committed records are the newer's", async (tc) => {
      const at = location();
      const leasePut = on(at.prefix, "PUT", (k) => k === `${LEASE_PREFIX}writer-1.json`);
      const tokenPut = on(at.prefix, "PUT", (k) => k.startsWith("_tokens/"));
      const m0 = await at.machine();
      // The older handle's first seal and first token post land and lose their answers.
      const mOld = await at.machine(
        { match: leasePut, fault: { kind: "lose-ack" }, times: 2 },
        { match: tokenPut, fault: { kind: "lose-ack" } },
      );
      // The newer handle's takeover of the lease (a compare-and-swap) lands and loses its answer.
      const mNew = await at.machine({ match: leasePut, fault: { kind: "lose-ack" } });
      const region2 = (id: number): { lat: [number, number] } => ({ lat: [2 * id, 2 * id + 2] });
      const open2 = (id: number, store: Store) =>
        StreamRun.open({
          store,
          id,
          count: 2,
          region: region2(id),
          schema: SCHEMA4,
          commitEvery: EVERY,
          pollMs: 5,
          timeoutMs: 30_000,
          env: {},
        });
      const arrays2 = (id: number, r: number, variant = 0) =>
        recordArrays(SCHEMA4, r + 1000 * variant, region2(id), (_, p) => p || id === 0);
      const owner = await open2(0, m0.store());
      const older = await open2(1, mOld.store());
      // Round 1: the older handle is the live one, and its records commit.
      for (const r of [0, 1]) await older.write(t(r), arrays2(1, r));
      for (const r of [0, 1]) await owner.write(t(r), arrays2(0, r));
      const newer = await open2(1, mNew.store());
      assert.equal(newer.nextRecord, 2, "the newer handle resumes after round 1");
      // Round 2: the older handle writes other values; its commit is Fenced, and so is its next call.
      const err = await thrown(async () => {
        for (const r of [2, 3]) await older.write(t(r), arrays2(1, r, 1));
      });
      assert.ok(err instanceof Fenced, `the older handle is Fenced, got ${err}`);
      await assert.rejects(older.write(t(4), arrays2(1, 4, 1)), Fenced);
      for (const r of [2, 3, 4]) await newer.write(t(r), arrays2(1, r));
      for (const r of [2, 3, 4]) await owner.write(t(r), arrays2(0, r));
      await Promise.all([newer.close(), owner.close()]);
      const lost = (m: { proxy: FaultProxy }) =>
        m.proxy.seen.filter((r) => r.fault === "lose-ack" && r.method === "PUT").length;
      assert.ok(lost(mOld) >= 3 && lost(mNew) >= 1, `answers lost: older ${lost(mOld)}, newer ${lost(mNew)}`);
      const clean = new MemoryStore();
      const [a, b] = [await open2(0, clean), await open2(1, clean)];
      for (let r = 0; r < 5; r++) {
        await b.write(t(r), arrays2(1, r));
        await a.write(t(r), arrays2(0, r));
      }
      await Promise.all([b.close(), a.close()]);
      assert.equal(await committedDump(at.direct()), await committedDump(clean));
      tc.diagnostic(`${faulted(m0, mOld, mNew)} faults injected`);
    });

    it("a 4-writer StreamRun with a healable fault on every 7th request of each writer ends complete and bitwise equal to an uninterrupted run", async (tc) => {
      const at = location();
      // Besides the drizzle, faults where they matter most: lost answers of the owner's manifest writes, of
      // each contributor's token post (create-only) and of every writer's lease writes (compare-and-swap),
      // and bodies cut short of the tokens the owner collects and of the manifest each contributor opens.
      const machines = await Promise.all(
        Array.from({ length: WRITERS }, (_, id) =>
          at.machine(
            id === 0
              ? {
                  match: on(at.prefix, "PUT", (k) => k === MANIFEST_KEY),
                  fault: { kind: "lose-ack" },
                  times: 2,
                }
              : { match: on(at.prefix, "PUT", (k) => k.startsWith("_tokens/")), fault: { kind: "lose-ack" } },
            {
              match: on(at.prefix, "PUT", (k) => k.startsWith(LEASE_PREFIX)),
              fault: { kind: "lose-ack" },
              times: 2,
            },
            id === 0
              ? {
                  match: on(at.prefix, "GET", (k) => k.startsWith("_tokens/")),
                  fault: { kind: "cut-body", at: 16 },
                  times: 3,
                }
              : {
                  match: on(at.prefix, "GET", (k) => k === MANIFEST_KEY),
                  fault: { kind: "cut-body", at: 16 },
                },
          ),
        ),
      );
      const started = Date.now();
      await Promise.all(
        machines.map(async (m, id) => {
          const run = await openRun(id, m.store());
          for (let r = run.nextRecord; r < RECORDS; r++) await run.write(t(r), rowArrays(id, r));
          await run.close();
        }),
      );
      const ms = Date.now() - started;
      const { compared: objects, toggled } = await assertSameObjects(at.direct(), reference);
      assert.equal(toggled, 0, "no owner resumed: every zarr.json is byte for byte the reference's");
      const requests = machines.reduce((n, m) => n + m.proxy.seen.length, 0);
      const kinds = new Map<string, number>();
      for (const m of machines)
        for (const r of m.proxy.seen) if (r.fault) kinds.set(r.fault, (kinds.get(r.fault) ?? 0) + 1);
      for (const k of ["status", "reset", "lose-ack", "cut-body", "delay"])
        assert.ok((kinds.get(k) ?? 0) > 0, `some ${k} faults fell on the run: ${JSON.stringify([...kinds])}`);
      tc.diagnostic(
        `${requests} requests, ${faulted(...machines)} faulted (${JSON.stringify(Object.fromEntries(kinds))}), ${objects} objects equal, ${ms} ms`,
      );
    });

    it("faults no retry heals in a 4-writer run: each is a named error, committed records stay, and a retried commit or a restarted writer finishes the run bitwise equal", async (tc) => {
      const at = location();
      // Writer 2's token post for round 2 is refused (403: the SDK does not retry it).
      const refusedPost: ProxyRule = {
        match: on(at.prefix, "PUT", (k) => k === "_tokens/2/2.json"),
        fault: { kind: "status", status: 403 },
      };
      // The owner's manifest write of round 3 lands five times over and every answer is lost.
      const lostCommit: ProxyRule = {
        match: on(at.prefix, "PUT", (k) => k === MANIFEST_KEY),
        fault: { kind: "lose-ack" },
        times: 5,
      };
      // Writer 3's network path goes down in round 3 (every connection reset) until a call has failed.
      let down = false;
      const outage: ProxyRule = {
        match: () => down,
        fault: { kind: "reset" },
        times: Number.POSITIVE_INFINITY,
      };
      const machines = [await at.machine(), await at.machine(), await at.machine(), await at.machine()];
      const runs: StreamRun[] = [];
      for (let id = 0; id < WRITERS; id++) runs.push(await openRun(id, machines[id]!.store()));
      const named: string[] = [];
      const failing = async (what: string, call: () => Promise<unknown>) => {
        const before = await committedRows(at.direct());
        const err = await thrown(call);
        assert.ok(err instanceof StoreError, `${what}: a StoreError, got ${err}`);
        named.push(`${what}: ${err.name} (${err.message.slice(0, 80)})`);
        await assertKept(at.direct(), before);
      };
      for (let round = 1; round <= RECORDS / EVERY; round++) {
        const records = [EVERY * (round - 1), EVERY * round - 1];
        // Contributors first: each posts its token; the owner then collects them and commits.
        for (const id of [1, 2, 3]) {
          let run = runs[id]!;
          if (id === 3 && round === 3) {
            down = true;
            machines[3]!.proxy.script(outage);
            await failing("writer 3's write", async () => {
              for (const r of records) await run.write(t(r), rowArrays(3, r));
            });
            down = false;
            // Restarted: a new process of writer 3 resumes at the committed state and writes again.
            run = runs[3] = await openRun(3, machines[3]!.store());
            assert.equal(run.nextRecord, EVERY * 2);
            for (let r = run.nextRecord; r < records[0]!; r++) await run.write(t(r), rowArrays(3, r));
          }
          if (id === 2 && round === 2) {
            machines[2]!.proxy.script(refusedPost);
            await run.write(t(records[0]!), rowArrays(2, records[0]!));
            await failing("writer 2's token post", () =>
              run.write(t(records[1]!), rowArrays(2, records[1]!)),
            );
            // The same commit, retried: its token is posted now.
            await run.commit();
            continue;
          }
          for (let r = run.nextRecord; r <= records[1]!; r++) await run.write(t(r), rowArrays(id, r));
        }
        let owner = runs[0]!;
        if (round === 3) {
          machines[0]!.proxy.script(lostCommit);
          await owner.write(t(records[0]!), rowArrays(0, records[0]!));
          await failing("the owner's commit", () => owner.write(t(records[1]!), rowArrays(0, records[1]!)));
          // The commit landed: a restarted owner resumes after it.
          owner = runs[0] = await openRun(0, machines[0]!.store());
          assert.equal(owner.nextRecord, EVERY * round);
          continue;
        }
        for (let r = owner.nextRecord; r <= records[1]!; r++) await owner.write(t(r), rowArrays(0, r));
      }
      await Promise.all(runs.map((r) => r.close()));
      assert.equal(named.length, 3, named.join("\n"));
      const { compared, toggled } = await assertSameObjects(at.direct(), reference);
      assert.equal(toggled, 0, "the round after the owner's restart rewrote every shape: no newline is left");
      tc.diagnostic(named.join("; "));
      tc.diagnostic(`${faulted(...machines)} faults injected, ${compared} objects equal`);
    });
  });
}

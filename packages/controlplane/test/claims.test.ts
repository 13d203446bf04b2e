import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FsStore } from "@zarr-stream/store";
import { ClaimConflict, ControlPlane } from "../src/index.js";
import { claimDigest, claimKey } from "../src/layout.js";
import { manualClock, manualObserver, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;

async function two<S extends TextMemoryStore | FsStore = TextMemoryStore>(
  store: S = new TextMemoryStore() as S,
) {
  const clock = manualClock(T0);
  const o = {
    product: "demo",
    now: clock,
    observer: manualObserver(clock),
    claimHeartbeatIntervalS: 0,
    runHeartbeatIntervalS: 0,
  };
  const a = await ControlPlane.open(store, { ...o, ownerId: "alice" });
  const b = await ControlPlane.open(store, { ...o, ownerId: "bob" });
  return { a, b, clock, store };
}

async function conflictOf(p: Promise<unknown>): Promise<ClaimConflict> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ClaimConflict, String(e));
    return e;
  }
  assert.fail("expected ClaimConflict");
}

test("claims: file is claims/<sha256(product:category:name)>.json with the reference fields", async () => {
  const { a, store } = await two();
  await a.acquireClaim("zarr_append:g1");
  const key = `.firecube/claims/${claimDigest("demo:zarr_append:g1")}.json`;
  assert.equal(key, claimKey("demo:zarr_append:g1"));
  const doc = JSON.parse((store as TextMemoryStore).text(key)!);
  assert.deepEqual(Object.keys(doc), [
    "product",
    "domain",
    "owner_id",
    "claim_path",
    "acquired_at",
    "last_heartbeat_at",
    "heartbeat_interval_s",
    "stale_threshold_s",
  ]);
  assert.equal(doc.domain, "demo:zarr_append:g1");
  assert.equal(doc.stale_threshold_s, 120);
  assert.match((store as TextMemoryStore).text(key)!, /"acquired_at":1724000000\.0/);
});

test("claims: a second acquirer gets a conflict naming the owner; a stale claim is never taken over", async () => {
  const { a, b, clock } = await two();
  await a.acquireClaim("zarr_region:g:slot=3");
  const fresh = await conflictOf(b.acquireClaim("zarr_region:g:slot=3"));
  assert.equal(fresh.owner, "alice");
  assert.equal(fresh.stale, false);
  assert.match(fresh.message, /held by alice \(fresh/);
  clock.advance(121);
  const stale = await conflictOf(b.acquireClaim("zarr_region:g:slot=3"));
  assert.equal(stale.stale, true);
  assert.match(stale.message, /held by alice \(stale/);
});

test("claims: staleness is strict: exactly 120 s is fresh, 120.001 s is stale", async () => {
  const { a, b, clock } = await two();
  await a.acquireClaim("x:y");
  clock.set(T0 + 120);
  assert.equal((await b.listClaims())[0]!.stale, false);
  await assert.rejects(b.clearClaim("demo:x:y"), { name: "ClaimConflict", stale: false });
  clock.set(T0 + 120.001);
  assert.equal((await b.listClaims())[0]!.stale, true);
});

test("claims: heartbeat refreshes last_heartbeat_at (keeps it fresh) and a lost claim fails the heartbeat", async () => {
  const { a, b, clock } = await two();
  await a.acquireClaim("x:y");
  clock.advance(100);
  await a.heartbeat("x:y");
  clock.advance(100);
  assert.equal((await b.listClaims())[0]!.stale, false);
  await assert.rejects(b.heartbeat("x:y"), { name: "ClaimLost" }); // bob never held it
  clock.advance(21);
  await b.clearClaim("demo:x:y");
  await assert.rejects(a.heartbeat("x:y"), { name: "ClaimLost" });
});

test("claims: heartbeat timer keeps the claim fresh in real time", async () => {
  const store = new TextMemoryStore();
  let t = T0;
  const cp = await ControlPlane.open(store, {
    product: "demo",
    now: () => t,
    claimHeartbeatIntervalS: 0.02,
    ownerId: "me",
  });
  await cp.acquireClaim("x:y");
  t += 1000;
  await new Promise((r) => setTimeout(r, 120));
  const [c] = await cp.listClaims();
  assert.equal(c!.claim.last_heartbeat_at, T0 + 1000);
  await cp.releaseClaim("x:y");
  assert.deepEqual(await cp.listClaims(), []);
});

test("claims: release deletes only our own claim", async () => {
  const { a, b } = await two();
  await a.acquireClaim("x:y");
  await conflictOf(b.releaseClaim("x:y"));
  await a.releaseClaim("x:y");
  await b.acquireClaim("x:y");
  assert.equal((await a.listClaims())[0]!.claim.owner_id, "bob");
});

test("claims: clear needs force for a fresh claim; stale sweep clears only stale claims and re-checks", async () => {
  const { a, b, clock } = await two();
  await a.acquireClaim("old:1");
  clock.advance(100);
  await a.acquireClaim("new:1");
  clock.advance(30); // old is 130 s silent, new 30 s
  const swept = await b.sweepStaleClaims();
  assert.deepEqual(
    swept.map((c) => c.domain),
    ["demo:old:1"],
  );
  assert.deepEqual(
    (await b.listClaims()).map((c) => c.claim.domain),
    ["demo:new:1"],
  );
  await a.heartbeat("new:1"); // observing old:1 moved the manual clock on; the owner of new:1 keeps up
  await conflictOf(b.clearClaim("demo:new:1"));
  assert.ok(await b.clearClaim("demo:new:1", { force: true }));
  assert.deepEqual(await b.listClaims(), []);
});

test("claims: sweep keeps a stale-looking claim whose owner heartbeats while it is observed", async () => {
  const { a, b, clock, store } = await two();
  await a.acquireClaim("x:y");
  clock.advance(200);
  const mem = store as TextMemoryStore;
  const realGet = mem.getVersioned.bind(mem);
  let reads = 0;
  mem.getVersioned = async (key: string) => {
    if (key.includes("/claims/") && ++reads === 3) await a.heartbeat("x:y"); // the owner comes back
    return realGet(key);
  };
  assert.deepEqual(await b.sweepStaleClaims(), []);
  mem.getVersioned = realGet;
  assert.equal((await b.listClaims()).length, 1);
  await a.assertClaimHeld("x:y");
});

test("claims: a holder whose clock runs 200 s slow but heartbeats is never cleared without force", async () => {
  const store = new TextMemoryStore();
  const clock = manualClock(T0);
  const slow = () => clock() - 200;
  const base = { product: "demo", claimHeartbeatIntervalS: 0, runHeartbeatIntervalS: 0 };
  const a = await ControlPlane.open(store, { ...base, ownerId: "alice", now: slow });
  // Bob's observation waits are where alice keeps heartbeating every 30 s, as her timer would.
  let since = 0;
  const b = await ControlPlane.open(store, {
    ...base,
    ownerId: "bob",
    now: clock,
    observer: {
      now: clock,
      sleep: async (s) => {
        clock.advance(s);
        since += s;
        if (since >= 30) {
          since = 0;
          await a.heartbeat("zarr_append:g");
        }
      },
    },
  });
  await a.acquireClaim("zarr_append:g");
  // By alice's own timestamps the claim is 200 s old, so the format's rule alone calls it stale.
  assert.equal((await b.listClaims())[0]!.stale, true);
  await assert.rejects(b.clearClaim("demo:zarr_append:g"), { name: "ClaimConflict" });
  assert.deepEqual(await b.sweepStaleClaims(), []);
  await conflictOf(b.acquireClaim("zarr_append:g"));
  await a.assertClaimHeld("zarr_append:g");
  assert.equal((await b.listClaims())[0]!.claim.owner_id, "alice");
});

test("claims: after a stalled holder is cleared and the claim retaken, its heartbeat and commit fence fail", async () => {
  const { a, b, clock, store } = await two();
  await a.acquireClaim("zarr_append:g");
  clock.advance(121); // alice stalls
  const gone = await b.clearClaim("demo:zarr_append:g");
  assert.equal(gone?.ownerId, "alice");
  await b.acquireClaim("zarr_append:g");
  await assert.rejects(a.assertClaimHeld("zarr_append:g"), { name: "ClaimLost" });
  await assert.rejects(a.heartbeat("zarr_append:g"), { name: "ClaimLost" });
  await assert.rejects(a.releaseClaim("zarr_append:g"), { name: "ClaimConflict", owner: "bob" });
  assert.equal(JSON.parse(store.text(claimKey("demo:zarr_append:g"))!).owner_id, "bob");
  await b.assertClaimHeld("zarr_append:g");
});

test("claims: a heartbeat whose write lands after a takeover cannot overwrite the new holder", async () => {
  const { a, b, clock, store } = await two();
  await a.acquireClaim("zarr_append:g");
  clock.advance(10);
  const key = claimKey("demo:zarr_append:g");
  // Between alice's decision to heartbeat and her write, the claim is cleared and bob acquires it.
  let fired = false;
  const takeover = async (k: string) => {
    if (k !== key || fired) return;
    fired = true;
    await store.delete(key);
    await b.acquireClaim("zarr_append:g");
  };
  const realPut = store.put.bind(store);
  const realCas = store.putIfVersion.bind(store);
  store.put = async (k, bytes) => {
    await takeover(k);
    return realPut(k, bytes);
  };
  store.putIfVersion = async (k, bytes, expected) => {
    await takeover(k);
    return realCas(k, bytes, expected);
  };
  await assert.rejects(a.heartbeat("zarr_append:g"), { name: "ClaimLost" });
  assert.ok(fired);
  assert.equal(JSON.parse(store.text(key)!).owner_id, "bob");
});

test("claims: an unreadable claim file is cleared with force, or by a sweep once observed silent", async () => {
  const { a, b, store } = await two();
  store.setText(claimKey("demo:x:broken"), '{"product": "demo", "dom');
  await a.acquireClaim("x:fine");
  const scan = await b.scanClaims();
  assert.equal(scan.corrupt.length, 1);
  assert.equal(scan.claims.length, 1);
  const forced = await b.clearClaim("demo:x:broken", { force: true });
  assert.match(forced?.corrupt ?? "", /not valid JSON/);
  store.setText(claimKey("demo:x:broken"), "");
  const swept = await b.sweepStaleClaims();
  assert.deepEqual(
    swept.map((c) => [c.domain, c.corrupt !== undefined]),
    [[undefined, true]],
  );
  assert.equal(store.text(claimKey("demo:x:broken")), undefined);
});

test("claims: bad domains are refused before any I/O", async () => {
  const { a, store } = await two();
  await assert.rejects(a.acquireClaim("nocolon"), { name: "SchemaError" });
  assert.deepEqual(await store.list(""), []);
});

test("claims: after acquire, conflict and heartbeat on a filesystem store, claims/ holds only <sha256>.json files", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cp-claims-"));
  try {
    const { a, b } = await two(new FsStore(dir));
    for (let i = 0; i < 20; i++) {
      await a.acquireClaim(`d:${i}`);
      await conflictOf(b.acquireClaim(`d:${i}`));
      await a.heartbeat(`d:${i}`);
    }
    const names = await readdir(join(dir, ".firecube", "claims"));
    assert.equal(names.length, 20);
    for (const n of names) assert.match(n, /^[0-9a-f]{64}\.json$/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("claims: heartbeats of one claim in flight at once (a timer's and an explicit one) both land; the claim stays held", async () => {
  for (const store of [new TextMemoryStore(), new FsStore(await mkdtemp(join(tmpdir(), "cp-hb-")))]) {
    const { a, clock } = await two(store);
    await a.acquireClaim("zarr_append:g");
    for (let i = 0; i < 5; i++) {
      clock.advance(1);
      const docs = await Promise.all([a.heartbeat("zarr_append:g"), a.heartbeat("zarr_append:g")]);
      assert.equal(docs.length, 2);
      await Promise.all([a.assertClaimHeld("zarr_append:g"), a.heartbeat("zarr_append:g")]);
    }
    await a.releaseClaim("zarr_append:g");
    assert.deepEqual(await a.listClaims(), []);
    if (store instanceof FsStore) await rm(store.root, { recursive: true, force: true });
  }
});

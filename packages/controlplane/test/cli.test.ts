import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FsStore } from "@zarr-stream/store";
import { ATTR_INDEX_HASH, ControlPlane, runControlPlaneCli } from "../src/index.js";
import { claimKey, INDEX_KEY } from "../src/layout.js";
import { manualClock, manualObserver, TextMemoryStore } from "./helpers/stores.js";

const T0 = 1724000000;

function harness() {
  const stores = new Map<string, TextMemoryStore>();
  const clock = manualClock(T0);
  let out = "";
  let err = "";
  const io = {
    out: (t: string) => {
      out += t;
    },
    err: (t: string) => {
      err += t;
    },
    openStore: (dir: string) => {
      if (!stores.has(dir)) stores.set(dir, new TextMemoryStore());
      return stores.get(dir)!;
    },
    now: clock,
    observer: manualObserver(clock),
  };
  const cli = async (...argv: string[]) => {
    out = "";
    err = "";
    const code = await runControlPlaneCli(["--store", "/p", ...argv], io);
    return { code, out, err, json: () => JSON.parse(out) };
  };
  const store = io.openStore("/p");
  const writer = (ownerId: string) =>
    ControlPlane.open(store, {
      product: "demo",
      now: clock,
      ownerId,
      runHeartbeatIntervalS: 0,
      claimHeartbeatIntervalS: 0,
    });
  return { cli, clock, store, writer, io };
}

test("cli: usage errors exit 2 and name the problem", async () => {
  const { cli, io } = harness();
  assert.equal(await runControlPlaneCli(["runs", "list"], io), 2);
  const r = await cli("frobnicate");
  assert.equal(r.code, 2);
  assert.match(r.err, /unknown command: frobnicate/);
  assert.equal((await cli("runs", "abandon")).code, 2);
  assert.equal((await cli("claims", "clear", "--domain", "x", "--all-stale")).code, 2);
  assert.equal((await cli("runs", "list", "--bogus")).code, 2);
  const help = await cli("runs", "list", "--help");
  assert.equal(help.code, 0);
  assert.match(help.out, /^Usage: zstream cp <subcommand> --store STORE/);
  assert.doesNotMatch(help.out, /<command>/);
});

test("cli: a store without .firecube/ is NoControlPlane (exit 3) for every subcommand, and stays empty", async () => {
  const { io } = harness();
  const empty = io.openStore("/empty");
  for (const words of [
    ["runs", "list"],
    ["claims", "list"],
    ["snapshots", "status"],
    ["recover"],
    ["recover", "--dry-run"],
  ]) {
    let err = "";
    const code = await runControlPlaneCli([...words, "--store", "/empty"], {
      ...io,
      err: (t) => {
        err += t;
      },
    });
    assert.equal(code, 3, words.join(" "));
    assert.match(err, /NoControlPlane: \/empty has no control plane/);
  }
  assert.deepEqual(await empty.list(""), []);
});

test("cli: recovery after a crash — runs list, abandon, claims clear, snapshots rebuild, resume", async () => {
  const { cli, clock, writer } = harness();
  const crashed = await writer("crashed");
  await crashed.startRun({ runId: "dead" });
  await crashed.appendRecord("dead", { key: "a", status: "active" });
  await crashed.flushRun("dead");
  await crashed.acquireClaim("zarr_append:g");
  const done = await writer("ok");
  await done.startRun({ runId: "good" });
  await done.appendRecord("good", { key: "b", status: "active" });
  await done.completeRun("good");

  let r = await cli("runs", "list", "--json");
  assert.deepEqual(
    r.json().map((x: { run_id: string; state: string; stale: boolean }) => [x.run_id, x.state, x.stale]),
    [
      ["dead", "live", false],
      ["good", "complete", false],
    ],
  );
  r = await cli("runs", "abandon", "--run-id", "dead");
  assert.equal(r.code, 1);
  assert.match(r.err, /ProtocolError: run dead is not stale/);
  r = await cli("snapshots", "rebuild");
  assert.equal(r.code, 1);
  assert.match(r.err, /blocking claims exist/);

  clock.advance(3601);
  r = await cli("runs", "abandon", "--all-stale", "--dry-run", "--json");
  assert.deepEqual(r.json(), { abandoned: ["dead"], dry_run: true });
  assert.equal((await cli("runs", "list", "--json")).json()[0].state, "live", "dry run wrote nothing");
  r = await cli("runs", "abandon", "--all-stale", "--reason", "host died");
  assert.equal(r.out, "abandoned: dead\n");
  r = await cli("claims", "list", "--json");
  assert.equal(r.json()[0].domain, "demo:zarr_append:g");
  assert.equal(r.json()[0].stale, true);
  r = await cli("claims", "clear", "--all-stale", "--json");
  assert.deepEqual(r.json(), { cleared: ["demo:zarr_append:g"], dry_run: false });
  r = await cli("snapshots", "rebuild", "--json");
  assert.equal(r.code, 0);
  assert.equal(r.json().records, 2, "run_good and b; the abandoned run contributes nothing");
  r = await cli("snapshots", "status", "--json");
  assert.equal(r.json().valid, true);
  const resumed = await writer("x");
  assert.equal((await resumed.history()).find((h) => h.runId === "dead")!.error, "host died");
  await resumed.startRun({ runId: "again" });
  await resumed.appendRecord("again", { key: "a", status: "active" });
  await resumed.acquireClaim("zarr_append:g");
  await resumed.releaseClaim("zarr_append:g");
  await resumed.completeRun("again");
  const state = await resumed.project();
  assert.equal(state.source, "snapshot");
  assert.deepEqual([...state.state.keys()].sort(), ["a", "b", "run_again", "run_good"]);
});

test("cli: claims clear --domain refuses a fresh claim unless --force", async () => {
  const { cli, writer } = harness();
  const alice = await writer("alice");
  await alice.startRun({ runId: "alice-run" });
  await alice.acquireClaim("zarr_region:g:slot=1");
  let r = await cli("claims", "clear", "--domain", "demo:zarr_region:g:slot=1");
  assert.equal(r.code, 1);
  assert.match(r.err, /ClaimConflict: .*held by alice \(fresh/);
  r = await cli("claims", "clear", "--domain", "demo:zarr_region:g:slot=1", "--force");
  assert.equal(r.code, 0);
  assert.equal((await cli("claims", "list", "--json")).json().length, 0);
});

test("cli: recover abandons stale runs, sweeps stale claims and rebuilds the snapshot", async () => {
  const { cli, clock, writer } = harness();
  const w = await writer("gone");
  await w.startRun({ runId: "r" });
  await w.acquireClaim("zarr_append:g");
  clock.advance(4000);
  const r = await cli("recover", "--json");
  const report = r.json();
  assert.deepEqual(report.abandoned, ["r"]);
  assert.deepEqual(report.cleared, ["demo:zarr_append:g"]);
  assert.equal(report.snapshot.rebuilt, true);
});

test("cli: index show, verify and rebuild (re-mirror from the record; never overwrite it)", async () => {
  const { cli, writer, store } = harness();
  const w = await writer("w");
  const runId = await w.startRun({ runId: "r" });
  const index = {
    groups: { data: { kind: "integer", params: {}, size: 12 } },
    name: "integer_only_v1",
    schema_version: "v1",
  };
  await w.ensureResolvedIndex({ index }, { runId });
  await w.completeRun(runId);
  let r = await cli("index", "show", "--json");
  assert.equal(r.json().identity_hash, "ac6579db66b817cf4c5e35fe54745d57dcf27a70070d4eca8c7da4d078360a1c");
  assert.equal((await cli("index", "verify")).code, 0);
  store.setText("zarr.json", JSON.stringify({ attributes: { [ATTR_INDEX_HASH]: "0".repeat(64) } }));
  r = await cli("index", "verify", "--json");
  assert.equal(r.code, 1);
  assert.equal(r.json().attrs, "drift");
  const before = store.text(INDEX_KEY);
  r = await cli("index", "rebuild", "--json");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.json().outcome, "rebuilt");
  assert.equal(store.text(INDEX_KEY), before);
  assert.equal((await cli("index", "verify")).code, 0);
  await store.delete(INDEX_KEY);
  await store.delete("zarr.json");
  r = await cli("index", "rebuild");
  assert.equal(r.code, 2);
  assert.match(r.err, /nothing|no index/);
});

test("cli: --store DIR opens a filesystem store by default", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cp-cli-"));
  try {
    const cp = await ControlPlane.open(new FsStore(dir), { product: "demo", runHeartbeatIntervalS: 0 });
    await cp.startRun({ runId: "on-disk" });
    await cp.close();
    let out = "";
    const code = await runControlPlaneCli(["runs", "list", "--json", "--store", dir], {
      out: (t) => {
        out += t;
      },
      err: () => undefined,
    });
    assert.equal(code, 0);
    assert.equal(JSON.parse(out)[0].run_id, "on-disk");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("cli: a corrupt claim file is listed, cleared by --force, --all-stale and recover, and reported as corrupt", async () => {
  const { cli, store } = harness();
  const key = claimKey("demo:zarr_append:g");
  store.setText(key, '{"product":"demo","domain":');
  let r = await cli("claims", "list", "--json");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.json()[0].file, key);
  assert.match(r.json()[0].corrupt, /not valid JSON/);
  r = await cli("claims", "clear", "--domain", "demo:zarr_append:g", "--force", "--json");
  assert.equal(r.code, 0, r.err);
  assert.match(r.json().corrupt, /not valid JSON/);
  assert.equal(store.text(key), undefined);

  store.setText(key, "");
  r = await cli("claims", "clear", "--all-stale", "--json");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.json().cleared.length, 1);
  assert.match(r.json().cleared[0], /corrupt/);
  assert.equal(store.text(key), undefined);

  store.setText(key, "not json at all");
  r = await cli("recover", "--json");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.json().complete, true);
  assert.match(r.json().cleared[0], /corrupt/);
  assert.equal(store.text(key), undefined);
});

test("cli: recover exits 1 and says what is left while a live writer holds a claim; 0 once it is gone", async () => {
  const { cli, clock, writer } = harness();
  const w = await writer("alive");
  const runId = await w.startRun({ runId: "live-run" });
  await w.acquireClaim("zarr_append:g");
  clock.advance(5);
  let r = await cli("recover", "--json");
  assert.equal(r.code, 1, r.out);
  const report = r.json();
  assert.equal(report.complete, false);
  assert.deepEqual(report.remaining_claims, ["demo:zarr_append:g (alive)"]);
  assert.deepEqual(report.live_runs, ["live-run"]);
  assert.match(report.snapshot, /refused/);
  r = await cli("recover");
  assert.equal(r.code, 1);
  assert.match(r.out, /incomplete: claim demo:zarr_append:g/);

  await w.releaseClaim("zarr_append:g");
  await w.completeRun(runId);
  r = await cli("recover", "--json");
  assert.equal(r.code, 0, r.out);
  assert.equal(r.json().complete, true);
  assert.equal(r.json().snapshot.rebuilt, true);
});

test("cli: recover leaves a run whose clock runs 2 h slow but which the store saw write just now", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cp-skew-"));
  try {
    const store = new FsStore(dir);
    const slow = await ControlPlane.open(store, {
      product: "demo",
      now: () => Date.now() / 1000 - 7200,
      ownerId: "slow",
      runHeartbeatIntervalS: 0,
      claimHeartbeatIntervalS: 0,
    });
    await slow.startRun({ runId: "slow-run" });
    await slow.acquireClaim("zarr_append:g");
    let out = "";
    const code = await runControlPlaneCli(["recover", "--store", dir, "--json"], {
      out: (t) => {
        out += t;
      },
      err: () => undefined,
      openStore: () => store,
    });
    assert.equal(code, 1);
    const report = JSON.parse(out);
    assert.deepEqual(report.abandoned, []);
    assert.deepEqual(report.cleared, []);
    assert.deepEqual(report.live_runs, ["slow-run"]);
    assert.equal((await slow.listRuns())[0]!.state, "live");
    await slow.assertClaimHeld("zarr_append:g");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

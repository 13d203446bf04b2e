// Products firecube 0.1.7 and we share, each case run by both tools on the same files: every case gives
// the same outcome in both, or a difference decisions.md names (asserted here as it is). The reference
// runs as one long-lived peer (interop/peer.py), so its import is paid once.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { canonicalJsonUtf8, parseJsonExact, stringifyJsonExact } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import {
  ControlPlane,
  type ProjectedState,
  resolvedIndexIdentityHash,
  runControlPlaneCli,
  slotIndexIdentityHash,
} from "../src/index.js";
import { claimDigest, INDEX_KEY, RUNS_PREFIX } from "../src/layout.js";
import { FirecubePeer } from "./helpers/firecube-peer.js";

const firecube = findPython({ venv: ".venv-firecube", modules: ["firecube", "zarr"] });
const { skip } = firecube;
const roots = tempRoots("cp-interop");
const KILLER = fileURLToPath(new URL("./fixtures/killed-writer.js", import.meta.url));

const INDEX = {
  groups: { data: { kind: "integer", params: {}, size: 12 } },
  name: "integer_only_v1",
  schema_version: "v1",
};
const ITEMS = [
  { identity_hash: "c".repeat(64), coordinate_value: 10, source_ref: "/x/c", source_ref_kind: "path" },
  { identity_hash: "a".repeat(64), coordinate_value: 9, source_ref: "/x/a", source_ref_kind: "path" },
  { identity_hash: "b".repeat(64), coordinate_value: 1.5, source_ref: "/x/b", source_ref_kind: "path" },
];
const MODEL = {
  epoch: "2026-01-01T00:00:00Z",
  groups: { g1: { cadence_s: 300, mode: "exact" } },
  name: "opera_v1",
  time_unit: null,
};

let peer: FirecubePeer;

/** A fresh product directory `<base>/<NAME>.zarr` and its name. */
function product(name: string): { root: string; name: string } {
  return { root: join(roots.fresh(), `${name}.zarr`), name };
}

async function ours(root: string, name: string, now?: () => number): Promise<ControlPlane> {
  return ControlPlane.open(new FsStore(root), {
    product: name,
    runHeartbeatIntervalS: 0,
    claimHeartbeatIntervalS: 0,
    claimWaitS: 2,
    ...(now ? { now } : {}),
  });
}

/** Python's canonical JSON of a state: what peer.py prints for the reference's. */
const canonical = (state: ProjectedState) => canonicalJsonUtf8(Object.fromEntries(state));

async function cli(root: string, name: string, argv: string[], now?: () => number) {
  let out = "";
  const code = await runControlPlaneCli([...argv, "--store", root, "--product", name], {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      out += t;
    },
    ...(now ? { now } : {}),
  });
  return { code, out };
}

/** Every file below `dir`, relative to it. */
function files(dir: string, prefix = ""): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

/** Rewrites a JSON document keeping every number as written, with `edit` applied to the parsed value. */
function editJson(path: string, edit: (doc: Record<string, unknown>) => void): void {
  const doc = parseJsonExact(readFileSync(path, "utf8")) as Record<string, unknown>;
  edit(doc);
  writeFileSync(path, stringifyJsonExact(doc)!);
}

describe("firecube 0.1.7 and zarr-stream on one product", { skip }, () => {
  before(async () => {
    peer = await FirecubePeer.start(firecube.require());
  });
  after(() => peer?.close());

  it("firecube's maintenance runs and time-coordinate consolidations are terminal to us: recover abandons none, the rebuild is not refused, both project the same records", async () => {
    const { root, name } = product("MAINT");
    await peer.value("init", root, name);
    await peer.value("write_run", root, name, { run_id: "fc-1", spans: 5 });
    await peer.value("maintenance", root, name, { run_id: "maint-ok", status: "complete" });
    await peer.value("maintenance", root, name, { run_id: "maint-bad", status: "failed" });
    await peer.value("consolidate", root, name, { groups: ["g"] });
    await peer.value("mark_replaced", root, name, { keys: ["span_fc-1_0_g"] });
    const theirs = await peer.value<{ run_id: string; status: string }[]>("runs", root, name);
    const cp = await ours(root, name);
    const mine = (await cp.listRuns()).map((r) => ({ run_id: r.runId, status: r.state }));
    assert.deepEqual(
      mine,
      theirs.map(({ run_id, status }) => ({ run_id, status })),
    );
    assert.equal(theirs.length, 5, "fc-1, maint-ok, maint-bad, time-coord-consolidation and the replace run");

    // Two hours on, by every clock: were any of these live to us, recover would abandon it.
    const old = new Date(Date.now() - 7_200_000);
    for (const f of files(join(root, ".firecube"))) utimesSync(join(root, ".firecube", f), old, old);
    const later = () => Date.now() / 1000 + 7200;
    const r = await cli(root, name, ["recover", "--json"], later);
    assert.equal(r.code, 0, r.out);
    const report = JSON.parse(r.out);
    assert.deepEqual(report.abandoned, []);
    assert.equal(report.snapshot.rebuilt, true);
    const after = await peer.value<{ run_id: string; status: string }[]>("runs", root, name);
    assert.deepEqual(
      after.map((x) => x.status),
      theirs.map((x) => x.status),
      "no status changed",
    );
    const replayed = await peer.value<string>("replay_state", root, name);
    assert.equal(
      await peer.value("state", root, name),
      replayed,
      "the reference reads our snapshot as its replay",
    );
    assert.equal(canonical((await cp.project()).state), replayed);
    assert.equal(
      Object.keys(JSON.parse(replayed)).length,
      8,
      "run_fc-1, 5 spans (one marked replaced), run_maint-ok, the replace run's record",
    );
  });

  it("a run firecube completes while we rebuild is replayed by both readers, not lost", async () => {
    const { root, name } = product("RACE");
    await peer.value("init", root, name);
    await peer.value("write_run", root, name, { run_id: "fc-a", spans: 3 });
    const store = new FsStore(root);
    const list = store.list.bind(store);
    let raced = false;
    store.list = async (prefix: string) => {
      const keys = await list(prefix);
      if (prefix === RUNS_PREFIX && !raced) {
        raced = true;
        await peer.value("write_run", root, name, { run_id: "fc-b", spans: 2 });
      }
      return keys;
    };
    const cp = await ControlPlane.open(store, { product: name, runHeartbeatIntervalS: 0 });
    const res = await cp.rebuildSnapshot();
    assert.ok(res.rebuilt && raced);
    assert.equal(res.records, 4, "fc-a's run record and spans: fc-b was not listed");
    const replayed = await peer.value<string>("replay_state", root, name);
    assert.equal(Object.keys(JSON.parse(replayed)).length, 7);
    assert.equal(canonical((await cp.project()).state), replayed);
    assert.equal(
      await peer.value("state", root, name),
      replayed,
      "the reference replays fc-b after our cutoff",
    );
  });

  it("writers SIGKILLed at random points, 20 times: no file firecube lists is ours, and firecube recovers, rebuilds and lists claims cleanly", async (t) => {
    const { root, name } = product("KILL");
    await peer.value("init", root, name);
    const began = performance.now();
    for (let k = 0; k < 20; k++) {
      const child = spawn(process.execPath, [KILLER, root, `w${k}`], { stdio: ["ignore", "pipe", "pipe"] });
      let err = "";
      child.stderr.on("data", (d) => {
        err += d;
      });
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d) => {
          if (String(d).includes("started"))
            setTimeout(() => child.kill("SIGKILL"), 30 + Math.random() * 400);
        });
        child.on("close", (_code, signal) =>
          signal === "SIGKILL" ? resolve() : reject(new Error(`writer w${k} ended on its own: ${err}`)),
        );
      });
    }
    const killedIn = performance.now() - began;
    const control = join(root, ".firecube");
    for (const f of readdirSync(join(control, "claims"))) assert.match(f, /^[0-9a-f]{64}\.json$/);
    for (const run of readdirSync(join(control, "runs"))) {
      for (const f of readdirSync(join(control, "runs", run)))
        assert.match(f, /^(run\.json|events-\d{5}\.jsonl)$/, run);
    }
    const leftovers = readdirSync(join(control, ".zs-tmp-staging")).length;
    t.diagnostic(
      `20 kills in ${killedIn.toFixed(0)} ms; ${leftovers} staging or lock files left in .firecube/.zs-tmp-staging`,
    );

    await sleep(1200); // past the writers' 1 s thresholds
    const listed = await peer.value<{ domain: string }[]>("claims", root, name);
    for (const c of listed) {
      assert.ok(readdirSync(join(control, "claims")).includes(`${claimDigest(c.domain)}.json`), c.domain);
    }
    await peer.value("recover", root, name);
    // The index claim keeps the default 120 s threshold: the operator, knowing its writer dead, forces it.
    for (const c of await peer.value<{ domain: string }[]>("claims", root, name)) {
      await peer.value("clear_claim", root, name, { domain: c.domain, force: true });
    }
    assert.deepEqual(await peer.value("claims", root, name), []);
    const rebuilt = await peer.value<{ skipped: boolean }>("rebuild", root, name);
    assert.equal(rebuilt.skipped, false);
    const cp = await ours(root, name);
    assert.ok((await cp.listRuns()).every((r) => r.state !== "live" && r.state !== "orphaned" && !r.corrupt));
    const state = await peer.value<string>("state", root, name);
    assert.equal(canonical((await cp.project()).state), state);
    assert.equal(canonical(await cp.replay()), state);
  });

  it("compact.lock, both formats: a fresh lock of either tool skips the other's rebuild; a stale one of firecube's is recovered by us only", async () => {
    const { root, name } = product("LOCK");
    await peer.value("init", root, name);
    await peer.value("write_run", root, name, { run_id: "fc-1", spans: 2 });
    const lock = join(root, ".firecube", "snapshots", "compact.lock");
    const cp = await ours(root, name);
    // firecube's lock, as its rebuild writes it (json.dumps with default separators).
    writeFileSync(lock, `{"token": "f00d", "created_at": ${Date.now() / 1000}}`);
    assert.deepEqual(await cp.rebuildSnapshot(), { rebuilt: false, reason: "locked", holder: "token f00d" });
    assert.deepEqual(await peer.value("rebuild", root, name), { skipped: true, locked: true, records: null });
    // Older than our lockStaleS (600 s): a crashed rebuild's, which we recover and firecube never does.
    writeFileSync(lock, `{"token": "f00d", "created_at": ${Date.now() / 1000 - 700}}`);
    assert.deepEqual(await peer.value("rebuild", root, name), { skipped: true, locked: true, records: null });
    assert.equal((await cp.rebuildSnapshot()).rebuilt, true);
    assert.throws(() => statSync(lock), /ENOENT/);
    // Our lock while our rebuild runs: firecube's rebuild skips.
    const store = new FsStore(root);
    const list = store.list.bind(store);
    let during: unknown;
    store.list = async (prefix: string) => {
      if (prefix === RUNS_PREFIX && during === undefined) {
        during = await peer.value("rebuild", root, name);
        assert.deepEqual(Object.keys(JSON.parse(readFileSync(lock, "utf8"))), [
          "token",
          "created_at",
          "owner_id",
          "acquired_at",
        ]);
      }
      return list(prefix);
    };
    const holder = await ControlPlane.open(store, { product: name, runHeartbeatIntervalS: 0 });
    assert.equal((await holder.rebuildSnapshot()).rebuilt, true);
    assert.deepEqual(during, { skipped: true, locked: true, records: null });
  });

  it("the resolved index: a held claim settles as matched_existing both ways; row 4 refused by both unless the attrs verify (then we rebuild, firecube refuses); items in one order; verify on an empty product", async () => {
    const a = product("IDX");
    await peer.value("init", a.root, a.name);
    const hash = resolvedIndexIdentityHash(INDEX, ITEMS);
    assert.deepEqual(
      await peer.value("ensure_index", a.root, a.name, { index: INDEX, items: ITEMS, run_id: "fc-idx" }),
      {
        outcome: "created",
        identity_hash: hash,
      },
    );
    // Our record of the same declaration lists its items in firecube's order (by str(coordinate_value)).
    const b = product("IDXOURS");
    await peer.value("init", b.root, b.name);
    const cpB = await ours(b.root, b.name);
    await cpB.ensureResolvedIndex(
      { index: INDEX, items: ITEMS },
      { runId: await cpB.startRun({ runId: "zs" }) },
    );
    const itemsOf = (root: string) => JSON.parse(readFileSync(join(root, INDEX_KEY), "utf8")).items;
    assert.deepEqual(itemsOf(b.root), itemsOf(a.root));
    assert.deepEqual(
      itemsOf(a.root).map((i: { coordinate_value: number }) => i.coordinate_value),
      [1.5, 10, 9],
    );

    // firecube holds resolved_index:current: we settle at once from the record and attrs.
    await peer.value("hold", a.root, a.name, {
      category: "resolved_index",
      name: "current",
      owner: "fc-holder",
    });
    const cp = await ours(a.root, a.name);
    const runId = await cp.startRun({ runId: "zs-idx" });
    const began = performance.now();
    const r = await cp.ensureResolvedIndex({ index: INDEX, items: ITEMS }, { runId });
    assert.deepEqual([r.outcome, r.row], ["matched_existing", 2]);
    assert.ok(performance.now() - began < 1500, "no wait for the holder");
    await peer.value("release_held", a.root, a.name);
    // We hold it: firecube's losing writer settles the same way.
    await cp.acquireClaim("resolved_index:current");
    const fc = await peer.value<{ outcome: string }>("ensure_index", a.root, a.name, {
      index: INDEX,
      items: ITEMS,
      run_id: "fc-idx-2",
    });
    assert.equal(fc.outcome, "matched_existing");
    await cp.releaseClaim("resolved_index:current");
    await cp.completeRun(runId);

    // Row 4 with items: the attrs' hash covers items they do not carry, so they cannot verify: both refuse.
    await rm(join(a.root, INDEX_KEY));
    const refused = await cli(a.root, a.name, ["index", "rebuild"]);
    assert.equal(refused.code, 1);
    assert.match(refused.out, /ManifestError: .*row 4/);
    const fcRefused = await peer.call("ensure_index", a.root, a.name, {
      index: INDEX,
      items: ITEMS,
      run_id: "fc-3",
    });
    assert.equal(fcRefused.ok ? "created" : fcRefused.error, "ManifestError");

    // Row 4 without items, the attrs verifying: we rebuild the record (firecube refuses: a documented difference).
    const c = product("ROW4");
    await peer.value("init", c.root, c.name);
    await peer.value("ensure_index", c.root, c.name, { index: INDEX, run_id: "fc-c" });
    await rm(join(c.root, INDEX_KEY));
    const fcRow4 = await peer.call("ensure_index", c.root, c.name, { index: INDEX, run_id: "fc-c2" });
    assert.equal(fcRow4.ok ? "created" : fcRow4.error, "ManifestError");
    const fcVerify = (root: string, name: string) =>
      peer.value<{ code: number }>("cli", root, name, {
        argv: ["zarr", "index", "verify", "--target", `file://${root}`, "--product-name", name],
      });
    assert.equal((await fcVerify(c.root, c.name)).code, 1);
    assert.equal((await cli(c.root, c.name, ["index", "verify"])).code, 1);
    const rebuilt = await cli(c.root, c.name, ["index", "rebuild", "--json"]);
    assert.equal(rebuilt.code, 0, rebuilt.out);
    assert.equal(JSON.parse(rebuilt.out).outcome, "rebuilt");
    assert.equal(
      (
        await peer.value<{ outcome: string }>("ensure_index", c.root, c.name, {
          index: INDEX,
          run_id: "fc-c3",
        })
      ).outcome,
      "matched_existing",
    );
    assert.equal((await fcVerify(c.root, c.name)).code, 0);
    assert.equal((await cli(c.root, c.name, ["index", "verify"])).code, 0);
    // Attrs that do not verify (their hash is not their payload's): both refuse.
    await rm(join(c.root, INDEX_KEY));
    editJson(join(c.root, "zarr.json"), (doc) => {
      (doc.attributes as Record<string, unknown>).firecube_resolved_index_identity_hash = "0".repeat(64);
    });
    assert.equal((await cli(c.root, c.name, ["index", "rebuild"])).code, 1);
    const fcTampered = await peer.call("ensure_index", c.root, c.name, { index: INDEX, run_id: "fc-c4" });
    assert.equal(fcTampered.ok ? "created" : fcTampered.error, "ManifestError");

    // index verify on a product without an index record: exit 3 from both.
    const e = product("EMPTY");
    await peer.value("init", e.root, e.name);
    assert.equal((await fcVerify(e.root, e.name)).code, 3);
    assert.equal((await cli(e.root, e.name, ["index", "verify"])).code, 3);
  });

  it("unknown keys in every document type: both tools list, project, verify and ensure exactly as before", async () => {
    const { root, name } = product("UNK");
    await peer.value("init", root, name);
    await peer.value("write_run", root, name, { run_id: "fc-1", spans: 3 });
    await peer.value("write_run", root, name, { run_id: "fc-2", spans: 1, replaces: ["span_fc-1_0_g"] });
    await peer.value("rebuild", root, name);
    await peer.value("write_run", root, name, { run_id: "fc-3", spans: 1 });
    await peer.value("ensure_index", root, name, { index: INDEX, items: ITEMS, run_id: "fc-idx" });
    await peer.value("ensure_slot", root, name, { model: MODEL, run_id: "fc-slot" });
    await peer.value("hold", root, name, { category: "zarr_append", name: "g", owner: "fc-holder" });
    const cp = await ours(root, name);
    const look = async () => ({
      fcRuns: (await peer.value<{ run_id: string; status: string }[]>("runs", root, name)).map((r) => [
        r.run_id,
        ["complete", "failed", "abandoned"].includes(r.status) ? r.status : "live",
      ]),
      zsRuns: (await cp.listRuns()).map((r) => [r.runId, r.state]),
      fcClaims: (await peer.value<{ domain: string }[]>("claims", root, name)).map((c) => c.domain),
      zsClaims: (await cp.listClaims()).map((c) => c.claim.domain),
      fcState: await peer.value<string>("state", root, name),
      zsState: canonical((await cp.project()).state),
      fcVerify: (
        await peer.value<{ code: number }>("cli", root, name, {
          argv: ["zarr", "index", "verify", "--target", `file://${root}`, "--product-name", name],
        })
      ).code,
      zsVerify: (await cli(root, name, ["index", "verify"])).code,
    });
    const before = await look();
    assert.deepEqual(before.zsRuns, before.fcRuns);
    assert.deepEqual(before.zsClaims, before.fcClaims);
    assert.equal(before.zsState, before.fcState);
    assert.deepEqual([before.fcVerify, before.zsVerify], [0, 0]);

    // A key no document defines, in every document: the envelope and the payload where there is one.
    const control = join(root, ".firecube");
    const extra = { zs_unknown: { added: "by a later writer", n: 1 } };
    const plant = (doc: Record<string, unknown>) => Object.assign(doc, extra);
    for (const f of files(control)) {
      const path = join(control, f);
      if (f.endsWith(".jsonl")) {
        const lines = readFileSync(path, "utf8")
          .split("\n")
          .filter((l) => l !== "");
        const edited = lines.map((l) => {
          const doc = parseJsonExact(l) as Record<string, unknown>;
          plant(doc);
          if (f.startsWith("runs/")) plant(doc.record as Record<string, unknown>);
          return stringifyJsonExact(doc);
        });
        writeFileSync(path, `${edited.join("\n")}\n`);
      } else if (f.endsWith(".json") && !f.startsWith(".zs-tmp")) {
        editJson(path, (doc) => {
          plant(doc);
          if (Array.isArray(doc.items)) for (const item of doc.items) plant(item);
          const model = doc.model as { groups: Record<string, Record<string, unknown>> } | undefined;
          if (model) {
            plant(model);
            for (const g of Object.values(model.groups)) plant(g);
          }
        });
      }
    }
    editJson(join(root, "zarr.json"), (doc) => plant(doc.attributes as Record<string, unknown>));
    const planted = await look();
    assert.deepEqual(planted.fcRuns, before.fcRuns);
    assert.deepEqual(planted.zsRuns, before.zsRuns);
    assert.deepEqual([planted.fcClaims, planted.zsClaims], [before.fcClaims, before.zsClaims]);
    assert.equal(planted.zsState, planted.fcState, "both keep the planted key in the records they project");
    assert.match(planted.fcState, /"zs_unknown"/);
    assert.deepEqual([planted.fcVerify, planted.zsVerify], [0, 0]);
    const runId = await cp.startRun({ runId: "zs-ensure" });
    assert.equal(
      (await cp.ensureResolvedIndex({ index: INDEX, items: ITEMS }, { runId })).outcome,
      "matched_existing",
    );
    assert.equal(
      (await cp.ensureSlotIndexModel({ ...MODEL, schema_version: "v1" }, { runId })).outcome,
      "verified",
    );
    assert.equal(
      await peer.value("ensure_slot", root, name, { model: MODEL, run_id: "fc-slot-2" }),
      slotIndexIdentityHash(MODEL),
    );
    await cp.completeRun(runId);
    await peer.value("release_held", root, name);
  });

  it("schema_version and corrupt runs: the same outcome where decisions.md says so, the documented difference where it does not", async () => {
    const { root, name } = product("VER");
    await peer.value("init", root, name);
    await peer.value("write_run", root, name, { run_id: "fc-1", spans: 2 });
    await peer.value("rebuild", root, name);
    const control = join(root, ".firecube");
    const cp = await ours(root, name);
    const replayed = await peer.value<string>("replay_state", root, name);
    const swap = (file: string, from: string, to: string) => {
      const path = join(control, file);
      const text = readFileSync(path, "utf8");
      writeFileSync(path, text.replace(from, to));
      return () => writeFileSync(path, text);
    };
    const fcState = () => peer.call<string>("state", root, name);

    // LATEST.json v3: firecube refuses to read the product; we replay the WAL (snapshots are derived data).
    let undo = swap("LATEST.json", '"schema_version":"v2"', '"schema_version":"v3"');
    assert.equal(
      (await fcState()).ok ? "read" : "ControlPlaneCorruptionError",
      "ControlPlaneCorruptionError",
    );
    let read = await cp.project();
    assert.deepEqual([read.source, canonical(read.state)], ["full-replay", replayed]);
    undo();
    // The snapshot's meta v3: both replay the WAL (the reference's error there is a ManifestError, which
    // its reader answers with a full replay).
    const meta = readdirSync(join(control, "snapshots")).find((f) => f.endsWith(".meta.json"))!;
    undo = swap(`snapshots/${meta}`, '"schema_version":"v2"', '"schema_version":"v3"');
    assert.equal(await peer.value("state", root, name), replayed);
    read = await cp.project();
    assert.deepEqual([read.source, canonical(read.state)], ["full-replay", replayed]);
    undo();
    // run.json v3: firecube reads it as any run.json; to us it is unreadable_run_meta, so the run's state
    // is its WAL's (complete here, as firecube says), and recover leaves the document as it is.
    undo = swap("runs/fc-1/run.json", '"schema_version":"v2"', '"schema_version":"v3"');
    assert.deepEqual(
      (await peer.value<{ status: string }[]>("runs", root, name)).map((r) => r.status),
      ["complete"],
    );
    const [v3] = await cp.listRuns();
    assert.deepEqual(
      [v3!.state, v3!.orphanReason, v3!.recordLags],
      ["complete", "unreadable_run_meta", true],
    );
    const before = readFileSync(join(control, "runs/fc-1/run.json"), "utf8");
    assert.equal((await cli(root, name, ["recover", "--json"])).code, 0);
    assert.equal(readFileSync(join(control, "runs/fc-1/run.json"), "utf8"), before);
    undo();
    // schema.json v3: firecube does not read it; we open no control plane on it.
    undo = swap("schema.json", '"v2"', '"v3"');
    assert.ok((await peer.call("runs", root, name)).ok);
    await assert.rejects(ours(root, name), { name: "ControlPlaneCorrupt" });
    undo();
    // A WAL event v3: that run is corrupt to both; a complete one cannot be projected by either.
    undo = swap("runs/fc-1/events-00001.jsonl", '"schema_version":"v2"', '"schema_version":"v3"');
    assert.equal((await peer.call("replay_state", root, name)).ok ? "read" : "corrupt", "corrupt");
    await assert.rejects(cp.replay(), { name: "ControlPlaneCorrupt" });
    assert.ok((await peer.call("runs", root, name)).ok, "firecube still lists runs");
    assert.equal((await cp.listRuns())[0]!.corrupt?.name, "ControlPlaneCorrupt", "and so do we");
    undo();
    // index/current.json v3 (row 6): both refuse.
    await peer.value("ensure_index", root, name, { index: INDEX, run_id: "fc-idx" });
    undo = swap(
      "index/current.json",
      '"recorded_by_run_id":"fc-idx","schema_version":"v1"',
      '"recorded_by_run_id":"fc-idx","schema_version":"v3"',
    );
    const fcRow6 = await peer.call("ensure_index", root, name, { index: INDEX, run_id: "fc-idx2" });
    assert.equal(fcRow6.ok ? "matched" : fcRow6.error, "ManifestError");
    await assert.rejects(cp.verifyResolvedIndex(), {
      name: "ManifestError",
      reason: "unsupported-schema-version",
    });
    undo();
    // slot_index/current.json v3: firecube does not check it; we refuse it as we refuse the index record's.
    await peer.value("ensure_slot", root, name, { model: MODEL, run_id: "fc-slot" });
    undo = swap(
      "slot_index/current.json",
      '"recorded_by_run_id":"fc-slot","schema_version":"v1"',
      '"recorded_by_run_id":"fc-slot","schema_version":"v3"',
    );
    assert.ok((await peer.call("ensure_slot", root, name, { model: MODEL, run_id: "fc-slot-2" })).ok);
    const runId = await cp.startRun({ runId: "zs-slot" });
    await assert.rejects(cp.ensureSlotIndexModel({ ...MODEL, schema_version: "v1" }, { runId }), {
      name: "ManifestError",
      reason: "unsupported-schema-version",
    });
    undo();
    await cp.completeRun(runId);
  });
});

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { canonicalJsonUtf8, IntegralFloat, parseJsonExact } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import {
  ControlPlane,
  InexactNumber,
  type JsonObject,
  type ProjectedState,
  runControlPlaneCli,
} from "../src/index.js";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const firecube = findPython({ venv: ".venv-firecube", modules: ["firecube", "zarr"] });
const interop = join(repo, "packages", "controlplane", "interop");
const script = join(interop, "index_writes.py");
const { skip } = firecube;

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/** Runs interop/exact_numbers.py with the reference and returns the JSON line it prints. */
function reference(
  mode: "write" | "read" | "read-index",
  root: string,
  product: string,
): Record<string, string> {
  const res = spawnSync(firecube.require(), [join(interop, "exact_numbers.py"), mode, root, product], {
    encoding: "utf8",
    timeout: 120_000,
  });
  assert.equal(res.status, 0, `exact_numbers.py ${mode} failed:\n${res.stdout}\n${res.stderr}`);
  return JSON.parse(res.stdout.trim().split("\n").at(-1)!);
}

/** Python's canonical JSON of a state: an integer that rounded would throw here, a float turned int would differ. */
function canonicalState(state: ProjectedState): string {
  return canonicalJsonUtf8(Object.fromEntries(state));
}

async function open(root: string, product: string): Promise<ControlPlane> {
  return ControlPlane.open(new FsStore(root), {
    product,
    runHeartbeatIntervalS: 0,
    claimHeartbeatIntervalS: 0,
  });
}

async function verify(root: string): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runControlPlaneCli(["index", "verify", "--store", root, "--product", "IDX", "--json"], {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
  });
  return { code, out, err };
}

it(
  "an index firecube 0.1.7 wrote with floats, integral floats and a 2^60 integer verifies; a changed digit does not",
  { skip },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "zs-exact-"));
    try {
      const root = join(dir, "IDX.zarr");
      const res = spawnSync(firecube.require(), [script, root, "IDX"], {
        encoding: "utf8",
        timeout: 120_000,
      });
      assert.equal(res.status, 0, `index_writes.py failed:\n${res.stdout}\n${res.stderr}`);
      const [outcome, hash] = res.stdout.trim().split(" ");
      assert.equal(outcome, "created");

      const ok = await verify(root);
      assert.equal(ok.code, 0, ok.err);
      assert.deepEqual(JSON.parse(ok.out), {
        record: "ok",
        identityHash: hash,
        attrs: "match",
        attrsHash: hash,
      });

      // The last digit of the big integer is covered by the hash: a record that differs only there is refused.
      const recordPath = join(root, ".firecube", "index", "current.json");
      const text = await readFile(recordPath, "utf8");
      await writeFile(recordPath, text.replace("1767225600000000000", "1767225600000000001"));
      const bad = await verify(root);
      assert.equal(bad.code, 1);
      assert.match(bad.err, /identity-hash mismatch/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);

it(
  "firecube 0.1.7 and we write integers up to 2^63-1 (and past int64) in WAL, run records, snapshots and index records; each reads the other's equal on every value",
  { skip },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "zs-exact-"));
    try {
      const root = join(dir, "EXACT.zarr");
      const wrote = reference("write", root, "EXACT");
      assert.equal(wrote.firecube, "0.1.7");
      const cp = await open(root, "EXACT");

      // The reference's snapshot and its WAL, read exactly.
      const fromTheirs = await cp.project();
      assert.equal(fromTheirs.source, "snapshot");
      assert.equal(canonicalState(fromTheirs.state), wrote.state);
      assert.equal(canonicalState(await cp.replay()), wrote.state);
      const big = fromTheirs.state.get("chunk_big")!;
      assert.equal(big.size, 2n ** 53n + 1n);
      assert.equal(big.chunk_id, INT64_MAX);
      assert.deepEqual((big.values as JsonObject).floats, [
        new IntegralFloat(1),
        new IntegralFloat(-0),
        0.1,
        new IntegralFloat(1e16),
        2.5e-7,
        new IntegralFloat(1e300),
        new IntegralFloat(-3),
      ]);
      const fcRun = (await cp.listRuns()).find((r) => r.runId === "fc-1")!;
      assert.deepEqual(fcRun.record!.slot_range, [2n ** 62n, INT64_MAX]);

      // Their resolved index holds int64 bounds, 1.0 and -0.0: its hash recomputes.
      const verified = await cp.verifyResolvedIndex();
      assert.equal(verified.record, "ok");
      assert.equal(verified.identityHash, wrote.index_hash);

      // Their live run: abandoning it rewrites its run.json, whose 2^63-1 threshold and slot range stay exact.
      await cp.abandonRun("fc-live", { force: true, reason: "interop" });
      const liveJson = await readFile(join(root, ".firecube", "runs", "fc-live", "run.json"), "utf8");
      assert.match(liveJson, /"run_stale_threshold_s":9223372036854775807[,}]/);
      assert.match(liveJson, /"slot_range":\[-9223372036854775808,18446744073709551617\]/);

      // Our run: bigints and integral floats written exactly; an unsafe JS number refused, the run goes on.
      const zs = await cp.startRun({ runId: "zs-1", slotRange: [2n ** 62n, INT64_MAX], slotGroup: "data" });
      await cp.appendRecord(zs, {
        key: "zs_chunk",
        type: "chunk",
        size: 2n ** 53n + 1n,
        timestamp: Date.now() / 1000,
        status: "ok",
        chunk_id: INT64_MAX,
        meta: { run_id: zs },
        values: {
          min: INT64_MIN,
          past_int64: 2n ** 64n + 1n,
          one: new IntegralFloat(1),
          neg_zero: new IntegralFloat(-0),
        },
        schema_version: "v2",
      });
      await assert.rejects(cp.appendRecord(zs, { key: "zs_bad", size: 2 ** 53 + 2 }), InexactNumber);
      await cp.completeRun(zs);
      const rebuilt = await cp.rebuildSnapshot();
      assert.ok(rebuilt.rebuilt);

      // Every line of the reference's snapshot is a line of ours, byte for byte.
      const snapshotLines = async (generation: string) =>
        (await readFile(join(root, ".firecube", "snapshots", `snapshot-${generation}.jsonl`), "utf8"))
          .trimEnd()
          .split("\n");
      const ourLines = new Set(await snapshotLines(rebuilt.generation));
      for (const line of await snapshotLines(fromTheirs.generation!)) assert.ok(ourLines.has(line), line);

      const ours = (await cp.project()).state;
      assert.equal(ours.get("zs_chunk")!.size, 2n ** 53n + 1n);
      assert.equal(ours.has("zs_bad"), false);

      // The reference reads our snapshot (its generation is ours) and our WAL to the same values.
      const read = reference("read", root, "EXACT");
      assert.equal(read.generation, rebuilt.generation);
      assert.equal(read.state, canonicalState(ours));
      assert.equal(read.wal_state, canonicalState(ours));
      const runs = parseJsonExact(read.runs!) as Record<string, JsonObject>;
      assert.deepEqual(runs["zs-1"]!.slot_range, [2n ** 62n, INT64_MAX]);
      assert.equal(runs["fc-live"]!.status, "abandoned");
      assert.equal(runs["fc-live"]!.run_stale_threshold_s, INT64_MAX);
      assert.deepEqual(runs["fc-live"]!.slot_range, [INT64_MIN, 2n ** 64n + 1n]);

      // An index record we write with the same kinds of numbers: the reference recomputes its hash and matches it.
      const root2 = join(dir, "EXB.zarr");
      const cp2 = await open(root2, "EXB");
      const run2 = await cp2.startRun({ runId: "zs-index" });
      const index = {
        groups: {
          data: {
            kind: "integer",
            params: {
              first: INT64_MIN,
              last: INT64_MAX,
              scale: new IntegralFloat(1),
              offset: new IntegralFloat(-0),
            },
            size: 3,
          },
        },
        epoch_ns: 1767225600000000000n,
        name: "exact_numbers_v1",
        schema_version: "v1",
      };
      const ensured = await cp2.ensureResolvedIndex({ index }, { runId: run2 });
      await cp2.completeRun(run2);
      // The same declaration as the reference's index above: the same identity.
      assert.equal(ensured.identityHash, wrote.index_hash);
      const theirs = reference("read-index", root2, "EXB");
      assert.deepEqual(theirs, {
        hash: ensured.identityHash,
        recomputed: ensured.identityHash,
        outcome: "matched_existing",
        attrs_hash: ensured.identityHash,
        index: canonicalJsonUtf8(index),
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);

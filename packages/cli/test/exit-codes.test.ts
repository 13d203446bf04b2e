import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ControlPlane } from "@zarr-stream/controlplane";
import type { StreamSchema } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { VERSION } from "../src/command-line.js";
import type { InspectReport, ZarrInspectReport } from "../src/inspect.js";
import { zstreamInProcess as run, tempDir } from "./helpers.js";

// The README's exit-code table, checked: every command with bad input gets the code the table gives and a
// message naming the problem; read-only commands leave a nonexistent path and a plain directory as they were.

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");

let root: string;
let NOPE: string;
let PLAIN: string;
let AFILE: string;
let STORE: string;

const schema: StreamSchema = {
  dims: [
    ["time", 0],
    ["y", 4],
    ["x", 6],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [{ name: "h", dims: ["time", "y", "x"], dtype: "float64", attrs: { units: "m" } }],
  statics: [],
  chunk_shape: { time: 1, y: 2, x: 3 },
  shard_shape: { time: 2, y: 4, x: 6 },
  profile: "wasm",
  coords: {
    time: { attrs: { units: "days since 2000-01-01 00:00:00 +00:00", calendar: "noleap" } },
  },
};

/** Every path under dir with its size and modification time: what a read-only command must not change. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d).sort()) {
      const p = join(d, e);
      const s = statSync(p);
      out.push(`${p} ${s.isDirectory() ? "dir" : s.size} ${s.mtimeMs}`);
      if (s.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

before(async () => {
  root = tempDir("exit-codes");
  NOPE = join(root, "nope");
  PLAIN = join(root, "plain");
  mkdirSync(PLAIN);
  writeFileSync(join(PLAIN, "notes.txt"), "not a store\n");
  AFILE = join(root, "afile.txt");
  writeFileSync(AFILE, "a file\n");
  STORE = join(root, "store.zarr");
  const w = await ZarrStreamWriter.create(new FsStore(STORE), schema, { kind: "single" });
  for (const [r, t] of [0, 365, 730].entries())
    await w.writeRecord(t, { h: Float64Array.from({ length: 24 }, (_, i) => r + i) });
  await w.close();
});
after(() => rmSync(root, { recursive: true, force: true }));

describe("the README's exit-code table", () => {
  it("lists the codes the commands return", () => {
    for (const code of [0, 1, 2, 3, 4]) assert.match(README, new RegExp(`^\\| ${code} \\| `, "m"));
    assert.match(README, /\| 2 \| usage error: .*does not exist/);
  });

  it("every command with bad input returns the table's code and names the problem", async () => {
    const out = (f: string) => join(root, f);
    const cases: [string[], number, RegExp][] = [
      // a path that does not exist: 2, named as such
      [["inspect", NOPE], 2, /STORE .*nope does not exist/],
      [["verify", NOPE], 2, /STORE .*nope does not exist/],
      [
        ["plot", NOPE, "--var", "h", "--record", "0", "--out", out("p.png")],
        2,
        /STORE .*nope does not exist/,
      ],
      [["dump", NOPE, "--out", out("d.json")], 2, /STORE .*nope does not exist/],
      [["serve", NOPE], 2, /STORE .*nope does not exist/],
      [["recover", NOPE], 2, /STORE .*nope does not exist/],
      [["recover", NOPE, "--dry-run"], 2, /STORE .*nope does not exist/],
      [["cp", "runs", "list", "--store", NOPE], 2, /STORE .*nope does not exist/],
      [["cp", "index", "show", "--store", NOPE], 2, /STORE .*nope does not exist/],
      [["journal", "compose", "--db", join(NOPE, "j.db"), "--store", NOPE], 2, /--db .*j\.db does not exist/],
      [
        ["journal", "publish", "--db", out("j.db"), "--store", NOPE, join(NOPE, "rows.csv")],
        2,
        /FILE .* does not exist/,
      ],
      [["conformance", "check", "--corpus", join(NOPE, "c.json"), "x.json"], 2, /--corpus .* does not exist/],
      [["inspect", AFILE], 2, /afile\.txt is a file, not a store directory/],
      // a plain directory: 3, not a Zarr store / no control plane
      [["inspect", PLAIN], 3, /StoreError: .*plain is not a Zarr store/],
      [["verify", PLAIN], 3, /StoreError: .*plain is not a Zarr store/],
      [["plot", PLAIN, "--var", "h", "--record", "0", "--out", out("p.png")], 3, /is not a Zarr store/],
      [["dump", PLAIN, "--out", out("d.json")], 3, /no output_manifest\.json/],
      [["recover", PLAIN], 3, /NoControlPlane: .*plain has no control plane/],
      [["recover", PLAIN, "--dry-run"], 3, /NoControlPlane: .*plain has no control plane/],
      [["cp", "runs", "list", "--store", PLAIN], 3, /NoControlPlane/],
      [["cp", "claims", "list", "--store", PLAIN], 3, /NoControlPlane/],
      // a missing required argument or option: 2
      [["inspect"], 2, /inspect needs a STORE/],
      [["recover"], 2, /recover needs a STORE/],
      [["serve"], 2, /serve needs a STORE/],
      [["plot", STORE], 2, /plot needs --var V/],
      [
        ["plot", STORE, "--var", "h", "--out", out("p.png")],
        2,
        /--var h is a streaming variable: pass --record I/,
      ],
      [["dump", STORE], 2, /dump needs --out/],
      [["cp", "runs", "list"], 2, /--store STORE is required/],
      [["journal", "publish", "--store", PLAIN, AFILE], 2, /--db is required/],
      [["conformance", "write", "--out", out("c")], 2, /--corpus is required/],
      // a bad number: 2, naming the option and the value
      [["plot", STORE, "--var", "h", "--record", "-1"], 2, /--record must be an integer >= 0, got "-1"/],
      [["plot", STORE, "--var", "h", "--record", "x"], 2, /--record must be an integer >= 0, got "x"/],
      [["plot", STORE, "--var", "h", "--record", "0", "--slice", "y=-1"], 2, /--slice must be dim=k/],
      [
        ["plot", STORE, "--var", "h", "--record", "0", "--slice", "y=9", "--out", out("p.png")],
        2,
        /--slice y=9 is outside \[0, 4\)/,
      ],
      [["demo", "--writers", "-1"], 2, /--writers must be an integer >= 1, got "-1"/],
      [["serve", STORE, "--port", "-5"], 2, /--port must be an integer >= 1, got "-5"/],
      // an --out that cannot be written: 2, before the store is read
      [
        ["plot", STORE, "--var", "h", "--record", "0", "--out", join(NOPE, "x.png")],
        2,
        /--out .*: directory .*nope does not exist/,
      ],
      [
        ["plot", STORE, "--var", "h", "--record", "0", "--out", join(AFILE, "x.png")],
        2,
        /afile\.txt is a file, not a directory/,
      ],
      [["plot", STORE, "--var", "h", "--record", "0", "--out", PLAIN], 2, /--out .*plain is a directory/],
      [["dump", STORE, "--out", join(NOPE, "d.json")], 2, /--out .*: directory .*nope does not exist/],
      // unknown commands, options and variables: 2
      [["frobnicate"], 2, /unknown command "frobnicate"/],
      [["inspect", STORE, "--frobnicate"], 2, /Unknown option '--frobnicate'/],
      [["cp", "frobnicate", "--store", STORE], 2, /unknown command: frobnicate/],
      [
        ["plot", STORE, "--var", "nosuch", "--record", "0", "--out", out("p.png")],
        2,
        /--var nosuch: no such variable/,
      ],
      // a store or contract error: 3
      [["plot", STORE, "--var", "h", "--record", "99", "--out", out("p.png")], 3, /NotCommitted/],
    ];
    const wrong: string[] = [];
    for (const [args, code, message] of cases) {
      const r = await run(...args);
      if (r.status !== code || !message.test(r.stderr))
        wrong.push(
          `zstream ${args.join(" ")}: exit ${r.status} (want ${code}), stderr ${JSON.stringify(r.stderr)}`,
        );
    }
    assert.deepEqual(wrong, []);
  });

  it("inspect --json answers an error with a JSON object on stdout", async () => {
    for (const [path, code, name] of [
      [NOPE, 2, "UsageError"],
      [PLAIN, 3, "StoreError"],
    ] as const) {
      const r = await run("inspect", path, "--json");
      assert.equal(r.status, code);
      const doc = JSON.parse(r.stdout) as { error: { name: string; message: string; exit_code: number } };
      assert.equal(doc.error.name, name);
      assert.equal(doc.error.exit_code, code);
      assert.match(doc.error.message, /does not exist|not a Zarr store/);
    }
  });
});

describe("read-only commands never create or change anything", () => {
  it("on a nonexistent path, a plain directory and a committed store, the tree is identical after", async () => {
    const png = join(root, "out", "x.png");
    const commands = (store: string): string[][] => [
      ["inspect", store],
      ["inspect", store, "--json"],
      ["verify", store],
      ["verify", store, "--deep", "--json"],
      ["plot", store, "--var", "h", "--record", "0", "--out", png],
      ["dump", store, "--out", join(root, "out", "d.json")],
      ["recover", store, "--dry-run"],
      ["recover", store],
      ["cp", "runs", "list", "--store", store],
      ["cp", "claims", "list", "--store", store],
      ["cp", "snapshots", "status", "--store", store],
      ["cp", "index", "show", "--store", store],
      ["journal", "compose", "--db", join(store, "j.db"), "--store", store],
    ];
    for (const store of [NOPE, PLAIN]) {
      const before = tree(root);
      for (const args of commands(store)) {
        const r = await run(...args);
        assert.notEqual(r.status, 0, `zstream ${args.join(" ")} succeeded on ${store}`);
        assert.deepEqual(tree(root), before, `zstream ${args.join(" ")} changed the tree`);
      }
    }
    const before = tree(STORE);
    for (const args of [
      ["inspect", STORE],
      ["inspect", STORE, "--json"],
      ["verify", STORE, "--deep"],
    ]) {
      const r = await run(...args);
      assert.equal(r.status, 0, `${args.join(" ")}: ${r.stderr}`);
    }
    assert.deepEqual(tree(STORE), before);
  });
});

describe("read-only control-plane commands", () => {
  it("on a store with a control plane, list/show/status and every --dry-run leave the tree identical", async () => {
    const dir = join(root, "with-cp.zarr");
    const cp = await ControlPlane.open(new FsStore(dir), {
      product: "demo",
      runHeartbeatIntervalS: 0,
      claimHeartbeatIntervalS: 0,
    });
    await cp.startRun({ runId: "r1" });
    await cp.acquireClaim("zarr_append:g");
    await cp.close();
    const before = tree(dir);
    for (const args of [
      ["cp", "runs", "list", "--json"],
      ["cp", "claims", "list"],
      ["cp", "snapshots", "status"],
      ["cp", "index", "show"],
      ["cp", "index", "verify"],
      ["cp", "recover", "--dry-run"],
      ["cp", "runs", "abandon", "--all-stale", "--dry-run"],
      ["cp", "claims", "clear", "--all-stale", "--dry-run"],
    ]) {
      const r = await run(...args, "--store", dir);
      // `index show` and `index verify` of a product without an index record exit 3, as firecube's do.
      const allowed = args[1] === "index" ? [3] : [0, 1];
      assert.ok(allowed.includes(r.status ?? -1), `${args.join(" ")}: ${r.status} ${r.stderr}`);
      assert.deepEqual(tree(dir), before, `zstream ${args.join(" ")} changed the store`);
    }
    const r = await run("recover", dir, "--dry-run", "--json");
    assert.equal(r.status, 1, "a fresh run and claim are left: a real recover would not complete");
    assert.equal(JSON.parse(r.stdout).dry_run, true);
    assert.deepEqual(tree(dir), before);
  });
});

describe("--help and --version", () => {
  it("every command and subcommand prints its usage with an example, and zstream's version", async () => {
    const commands = [
      ["demo"],
      ["inspect"],
      ["verify"],
      ["plot"],
      ["dump"],
      ["serve"],
      ["recover"],
      ["cp"],
      ["cp", "runs", "list"],
      ["cp", "claims", "clear"],
      ["cp", "recover"],
      ["journal"],
      ["journal", "publish"],
      ["journal", "compose"],
      ["conformance"],
      ["conformance", "write"],
      ["conformance", "check"],
    ];
    for (const words of commands) {
      for (const flag of ["--help", "-h"]) {
        const r = await run(...words, flag);
        assert.equal(r.status, 0, `${words.join(" ")} ${flag}: ${r.stderr}`);
        assert.match(r.stdout, new RegExp(`^Usage: zstream ${words[0]}`), words.join(" "));
        assert.match(r.stdout, /Example:\n {2}zstream /, words.join(" "));
        assert.doesNotMatch(r.stdout, /<command> --store|Unknown option/);
      }
      const v = await run(...words, "--version");
      assert.equal(v.status, 0);
      assert.equal(v.stdout, `zstream ${VERSION}\n`);
    }
    assert.equal((await run("--version")).stdout, `zstream ${VERSION}\n`);
    assert.match((await run("help", "cp")).stdout, /^Usage: zstream cp <subcommand>/);
    assert.match((await run("--help")).stdout, /--version/);
  });
});

describe("inspect prints decoded CF times", () => {
  it("the committed records' first and last time in the time coordinate's calendar", async () => {
    const text = await run("inspect", STORE);
    assert.equal(text.status, 0, text.stderr);
    assert.match(
      text.stdout,
      /^records +3 committed, t 2000-01-01T00:00:00 \.\. 2002-01-01T00:00:00 \(noleap\)$/m,
    );
    const report = JSON.parse((await run("inspect", STORE, "--json")).stdout) as InspectReport;
    assert.deepEqual(report.time, { units: "days since 2000-01-01 00:00:00 +00:00", calendar: "noleap" });
    assert.deepEqual(
      [report.records.first_t, report.records.last_t, report.records.first_time, report.records.last_time],
      [0, 730, "2000-01-01T00:00:00", "2002-01-01T00:00:00"],
    );
  });
});

const zarrPython = findPython({ modules: ["numpy", "zarr"] });

// A store as zarr-python 3 writes it: default codecs (bytes + zstd), "c/" chunk keys, dimension_names, a
// CF time coordinate in a proleptic_gregorian calendar, no output_manifest.json.
const WRITE_ZARR_PYTHON = `
import sys
import numpy as np
import zarr
g = zarr.open_group(sys.argv[1], mode="w", zarr_format=3)
t = g.create_array("time", shape=(4,), chunks=(4,), dtype="f8", dimension_names=["time"],
    attributes={"units": "hours since 1999-12-31 18:00:00 -06:00", "calendar": "proleptic_gregorian"})
t[:] = [0, 6, 12, 18]
lat = g.create_array("lat", shape=(3,), chunks=(3,), dtype="f4", dimension_names=["lat"],
    attributes={"units": "degrees_north"})
lat[:] = [-10, 0, 10]
t2m = g.create_array("t2m", shape=(4, 3, 5), chunks=(1, 3, 5), dtype="f4",
    dimension_names=["time", "lat", "lon"], attributes={"units": "K", "long_name": "temperature"})
t2m[:] = np.arange(60, dtype="f4").reshape(4, 3, 5) + 270
`;

describe("a Zarr v3 store zarr-python wrote (no manifest)", () => {
  it(
    "inspect shows its arrays and decoded times; plot draws an array; neither changes the store",
    {
      skip: zarrPython.skip,
    },
    async () => {
      const dir = join(root, "zarr-python.zarr");
      const w = spawnSync(zarrPython.require(), ["-c", WRITE_ZARR_PYTHON, dir], { encoding: "utf8" });
      assert.equal(w.status, 0, w.stderr);
      const before = tree(dir);

      const r = await run("inspect", dir, "--json");
      assert.equal(r.status, 0, r.stderr);
      const report = JSON.parse(r.stdout) as ZarrInspectReport;
      assert.equal(report.format, "zarr");
      assert.deepEqual(
        report.arrays.map((a) => [a.name, a.dims.join(","), a.shape.join("x"), a.dtype, a.objects]),
        [
          ["lat", "lat", "3", "float32", 1],
          ["t2m", "time,lat,lon", "4x3x5", "float32", 4],
          ["time", "time", "4", "float64", 1],
        ],
      );
      assert.match(report.arrays[1]!.codecs, /zstd/);
      assert.deepEqual(
        [
          report.time?.name,
          report.time?.calendar,
          report.time?.count,
          report.time?.first_time,
          report.time?.last_time,
        ],
        ["time", "proleptic_gregorian", 4, "2000-01-01T00:00:00", "2000-01-01T18:00:00"],
      );
      const text = await run("inspect", dir);
      assert.match(
        text.stdout,
        /^time +time: 4 values, 2000-01-01T00:00:00 \.\. 2000-01-01T18:00:00 \(proleptic_gregorian\)$/m,
      );
      assert.match(text.stdout, /^t2m +time,lat,lon +4x3x5 +1x3x5 +float32 /m);

      const png = join(root, "t2m.png");
      const p = await run("plot", dir, "--var", "t2m", "--record", "2", "--out", png);
      assert.equal(p.status, 0, p.stderr);
      assert.match(
        p.stdout,
        /heatmap .*temperature \(K\), 2000-01-01 12:00 \(proleptic_gregorian\) \[record 2\].*range 300 \.\. 314/,
      );
      assert.equal(readFileSync(png).subarray(1, 4).toString(), "PNG");
      const line = await run("plot", dir, "--var", "lat", "--out", join(root, "lat.png"));
      assert.equal(line.status, 0, line.stderr);
      assert.match(line.stdout, /\(line /);
      const noRecord = await run("plot", dir, "--var", "t2m", "--out", png);
      assert.equal(noRecord.status, 2);
      assert.match(noRecord.stderr, /--var t2m has the time dim time: pass --record I/);
      const series = await run("plot", dir, "--var", "t2m", "--series", "--slice", "lat=1", "--out", png);
      assert.equal(series.status, 0, series.stderr);
      assert.match(series.stdout, /\(series .*mean over lon \(unweighted\); at lat = 0°N \[1\]/);
      const outside = await run("plot", dir, "--var", "t2m", "--record", "4", "--out", png);
      assert.equal(outside.status, 2);
      assert.match(outside.stderr, /--record 4 is outside \[0, 4\) of time/);
      assert.deepEqual(tree(dir), before);
    },
  );
});

import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readRecord } from "@zarr-stream/reader";
import { validateConformanceDump } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { SMALL_DEMO, tempDir, zstream, zstreamInProcess } from "./helpers.js";

let root: string;
let store: string;

describe("zstream commands (child process)", () => {
  before(() => {
    root = tempDir("cli");
    store = join(root, "demo.zarr");
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("demo writes, reads back bitwise and prints the summary and quicklook path", () => {
    const r = zstream("demo", "--out", store, ...SMALL_DEMO);
    assert.equal(r.status, 0, r.stderr);
    for (const label of ["store", "records", "written", "throughput", "read back", "verify", "quicklook"]) {
      assert.match(r.stdout, new RegExp(`^${label} +`, "m"));
    }
    assert.match(r.stdout, /12 committed by 4 writers in 3 commits \(commit_seq 3\)/);
    assert.match(r.stdout, /identical to what was written/);
    assert.match(r.stdout, /compression ratio \d+\.\d+x/);
    const png = /^quicklook +(.*)$/m.exec(r.stdout)![1]!;
    assert.equal(readFileSync(png).subarray(1, 4).toString(), "PNG");
    // not a TTY: plain progress lines, no carriage-return bar
    assert.ok(!r.stderr.includes("\r"));
    assert.match(r.stderr, /commit 3\/3: 12 records committed/);
  });

  it("demo refuses a non-empty --out and bad options with exit 2", async () => {
    assert.equal(zstream("demo", "--writers", "0").status, 2);
    const cases: [string[], RegExp][] = [
      [["--out", store], /exists and is not empty/],
      [["--writers", "0"], /--writers must be an integer >= 1/],
      [["--grid", "10by20"], /--grid must be LATxLON/],
      [["--profile", "fast"], /--profile must be one of/],
      [["--grid", "4x4", "--writers", "7"], /cannot split a 4x4 grid/],
      [["--frobnicate"], /Unknown option '--frobnicate'/],
    ];
    for (const [args, message] of cases) {
      const r = await zstreamInProcess("demo", ...args);
      assert.equal(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split("\n").length, 1);
    }
  });

  it("--help on every command prints usage with an example, exit 0", async () => {
    for (const cmd of ["demo", "inspect", "verify", "plot", "dump", "manifest", "serve", "recover"]) {
      const r = await zstreamInProcess(cmd, "--help");
      assert.equal(r.status, 0);
      assert.match(r.stdout, new RegExp(`^Usage: zstream ${cmd}`));
      assert.match(r.stdout, /Example:\n {2}zstream /);
    }
    const main = zstream("--help");
    assert.equal(main.status, 0);
    assert.match(main.stdout, /Exit codes: 0 ok, 1 check failed or refused, 2 usage error/);
  });

  it("journal and conformance commands reach their packages", () => {
    for (const cmd of ["journal", "conformance"]) {
      const r = zstream(cmd, "--help");
      assert.equal(r.status, 0, `${cmd}: ${r.stderr}`);
      assert.match(r.stdout, /usage/i);
      assert.match(r.stdout, /write|publish/);
    }
  });

  it("errors are one line; --debug adds the stack trace", () => {
    const plain = zstream("plot", store, "--var", "temperature", "--record", "99");
    assert.equal(plain.status, 3);
    assert.equal(plain.stderr.trim().split("\n").length, 1);
    assert.ok(!plain.stderr.includes("    at "));
    const debug = zstream("plot", store, "--var", "temperature", "--record", "99", "--debug");
    assert.equal(debug.status, 3);
    assert.match(debug.stderr, /\n {4}at /);
    const unknown = zstream("frobnicate");
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /unknown command "frobnicate"/);
  });

  it("§10 dump writes earthsciio/write-v2-dump/v1 with the read-back values", async () => {
    const out = join(root, "dump.json");
    const r = zstream("dump", store, "--out", out, "--case", "demo");
    assert.equal(r.status, 0, r.stderr);
    const d = JSON.parse(readFileSync(out, "utf8"));
    assert.equal(d.schema, "earthsciio/write-v2-dump/v1");
    assert.equal(d.case, "demo");
    assert.equal(d.manifest_schema, "earthsciio/output-manifest/v2");
    assert.equal(d.commit_seq, 3);
    assert.deepEqual(
      d.records.map((x: { index: number; t: number }) => [x.index, x.t]),
      Array.from({ length: 12 }, (_, i) => [i, i * 3600]),
    );
    const rec7 = d.records[7].vars.temperature;
    assert.equal(rec7.dtype, "float32");
    assert.deepEqual(rec7.shape, [36, 72]);
    const bytes = Buffer.from(rec7.data_b64, "base64");
    const got = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    const want = (await readRecord(new FsStore(store), "temperature", 7)).data as Float32Array;
    assert.deepEqual(got, want);
    assert.deepEqual(Object.keys(d.statics), ["land_mask"]);
    assert.equal(d.blobs.length, 3 * 4);
    assert.ok(
      d.blobs.every(
        (b: { key: string; hex: string }) => b.key === "rng_state" && /^[0-9a-f]{32}$/.test(b.hex),
      ),
    );

    assert.doesNotThrow(() => validateConformanceDump(d));
  });
});

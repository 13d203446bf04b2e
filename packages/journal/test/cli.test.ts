import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { runJournalCli } from "../src/index.js";
import { tempDir } from "./helpers.js";

async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (c: Buffer) => out.push(c));
  stderr.on("data", (c: Buffer) => err.push(c));
  const code = await runJournalCli(argv, { stdout, stderr });
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

describe("zstream journal CLI (in-process)", () => {
  test("publish, compose to stdout and --out, with compaction at --max-parts", async (t) => {
    const dir = tempDir(t, "cli");
    const db = join(dir, "j.db");
    const store = join(dir, "store");
    const parts = ["a\r\n1\r\n", "a,b\r\n2,3\r\n", "a,b,c\r\n4,5,6\r\n"];
    for (const [i, p] of parts.entries()) {
      const file = join(dir, `p${i}.csv`);
      writeFileSync(file, p);
      const r = await cli(["publish", "--db", db, "--store", store, file, "--max-parts", "2"]);
      assert.equal(r.code, 0, r.stderr);
      const summary = JSON.parse(r.stdout);
      assert.equal(summary.outputIdentifier, `journal-p00000${i}`);
      assert.equal(summary.compacted, i === 2);
    }
    const composite = "a,b,c\r\n1,,\r\n2,3,\r\n4,5,6\r\n";
    const stdout = await cli(["compose", "--db", db, "--store", store]);
    assert.equal(stdout.code, 0, stdout.stderr);
    assert.equal(stdout.stdout, composite);
    const outFile = join(dir, "out.csv");
    const toFile = await cli(["compose", "--db", db, "--store", store, "--out", outFile]);
    assert.equal(toFile.code, 0, toFile.stderr);
    assert.equal(readFileSync(outFile, "utf8"), composite);
    assert.deepEqual(JSON.parse(toFile.stdout), { out: outFile, bytes: composite.length });
    const zipFile = join(dir, "session.zip");
    const exported = await cli(["export", "--db", db, "--store", store, "--out", zipFile]);
    assert.equal(exported.code, 0, exported.stderr);
    const zip = readFileSync(zipFile);
    assert.equal(zip.readUInt32LE(0), 0x04034b50);
    assert.equal(
      zip.readUInt16LE(zip.length - 22 + 10),
      parts.length + 1,
      "entries: every part plus index.json",
    );
    assert.deepEqual(JSON.parse(exported.stdout), { out: zipFile, bytes: zip.length });
    // A failed export leaves no file at --out (nor its partial file).
    writeFileSync(join(store, "journal", "journal-p000000.csv"), "a\r\n9\r\n");
    const failed = await cli(["export", "--db", db, "--store", store, "--out", join(dir, "bad.zip")]);
    assert.equal(failed.code, 3);
    assert.match(failed.stderr, /CorruptShard/);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith("bad.zip")),
      [],
    );
  });

  test("prune --dry-run lists due rows without deleting; prune deletes them", async (t) => {
    const dir = tempDir(t, "cli-prune");
    const db = join(dir, "j.db");
    const store = join(dir, "store");
    for (let i = 0; i < 3; i++) {
      const file = join(dir, `p${i}.ndjson`);
      writeFileSync(file, `{"i":${i}}\n`);
      assert.equal((await cli(["publish", "--db", db, "--store", store, "--max-parts", "2", file])).code, 0);
    }
    const future = "2999-01-01T00:00:00Z";
    const dry = await cli(["prune", "--db", db, "--store", store, "--cutoff", future, "--dry-run"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(JSON.parse(dry.stdout).pruned, ["journal-p000000", "journal-p000001"]);
    const real = await cli(["prune", "--db", db, "--store", store, "--cutoff", future]);
    assert.deepEqual(JSON.parse(real.stdout).pruned, ["journal-p000000", "journal-p000001"]);
    assert.deepEqual(JSON.parse(real.stdout).orphans, []);
    const again = await cli(["prune", "--db", db, "--store", store, "--cutoff", future]);
    assert.deepEqual(JSON.parse(again.stdout).pruned, []);
    assert.equal(
      (await cli(["compose", "--db", db, "--store", store])).stdout,
      '{"i":0}\n{"i":1}\n{"i":2}\n',
    );
  });

  test("--help prints usage; bad usage exits 2; contract errors exit 3 naming the error", async (t) => {
    const help = await cli(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /publish --db F --store DIR FILE/);
    assert.match(help.stdout, /prune --db F --store DIR --cutoff ISO \[--dry-run\]/);
    const dir = tempDir(t, "cli-bad");
    const db = join(dir, "j.db");
    const store = join(dir, "store");
    for (const argv of [
      [],
      ["frobnicate"],
      ["publish", "--db", db, "--store", store],
      ["compose", "--store", store],
      ["publish", "--bogus"],
      ["publish", "--db", db, "--store", store, join(dir, "no-such.csv")],
      ["compose", "--db", join(dir, "no-such.db"), "--store", store],
    ]) {
      const r = await cli(argv);
      assert.equal(r.code, 2, `${argv.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, /^error: /);
    }
    assert.equal(existsSync(join(dir, "no-such.db")), false, "compose never creates a journal");
    const noFormat = join(dir, "part.txt");
    writeFileSync(noFormat, "a\r\n1\r\n");
    const r = await cli(["publish", "--db", db, "--store", store, noFormat]);
    assert.equal(r.code, 3);
    assert.match(r.stderr, /JournalError: .*format/);
    const hostile = join(dir, "hostile.csv");
    writeFileSync(hostile, "\r\n3,4\r\n");
    const refused = await cli(["publish", "--db", db, "--store", store, hostile]);
    assert.equal(refused.code, 3);
    assert.match(
      refused.stderr,
      /^error: PartRefused: journal-p000000: has data lines under an empty header line/,
    );
    const badCutoff = await cli(["prune", "--db", db, "--store", store, "--cutoff", "soon"]);
    assert.equal(badCutoff.code, 3);
    assert.match(badCutoff.stderr, /JournalError: cutoff "soon" is not a date/);
  });
});

import assert from "node:assert/strict";
import { fork } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { PublishConflict } from "@zarr-stream/spec";
import { FsStore, MemoryStore } from "@zarr-stream/store";
import {
  advanceWatermark,
  composeHeadToStream,
  composeJournal,
  type JournalRegistry,
  nextWatermark,
  publishPart,
  runJournalCli,
  SqliteJournalRegistry,
} from "../src/index.js";
import { enc, tempDir, text } from "./helpers.js";

const PUBLISHER = fileURLToPath(new URL("./fixtures/publisher.js", import.meta.url));

async function head(registry: JournalRegistry, store: MemoryStore | FsStore): Promise<string> {
  const blocks: Uint8Array[] = [];
  await composeHeadToStream(registry, store, (b) => void blocks.push(b));
  return text(Buffer.concat(blocks));
}

/** Data lines of a CSV composite, without its header line. */
function dataLines(csv: string): string[] {
  return csv.split("\r\n").slice(1, -1);
}

describe("journal publishing under concurrency: concurrent publishers and retries", () => {
  test("two publishers at once: both parts land, in some order, each exactly once", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const parts = Array.from({ length: 40 }, (_, i) => `who,seq\r\n${i % 2 ? "b" : "a"},${i}\r\n`);
    const results = await Promise.all(
      parts.map((p) => publishPart({ registry, store, part: enc(p), format: "csv", maxParts: 8 })),
    );
    assert.ok(results.every((r) => r.created));
    assert.deepEqual(
      results.map((r) => r.row.config.partIndex).sort((a, b) => a - b),
      Array.from({ length: 40 }, (_, i) => i),
    );
    const byIndex = [...results].sort((a, b) => a.row.config.partIndex - b.row.config.partIndex);
    const ordered = byIndex.map((r) => enc(parts[results.indexOf(r)]!));
    assert.equal(await head(registry, store), text(composeJournal(ordered, "csv")));
    assert.deepEqual(
      dataLines(await head(registry, store)).sort(),
      parts.map((p) => p.split("\r\n")[1]!).sort(),
    );
  });

  test("a registration whose head moved is a PublishConflict, and nothing is written", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const first = await publishPart({ registry, store, part: enc("a\r\n1\r\n"), format: "csv" });
    const stale = { ...first.row.config, outputIdentifier: "journal-p000001", partIndex: 1 };
    await assert.rejects(registry.register(stale, [], null), PublishConflict);
    assert.equal((await registry.rows()).length, 1);
    await registry.register(stale, [], first.row.id);
    assert.equal((await registry.rows()).length, 2);
  });

  test("CLI: publishing the same FILE again without --part-index is a retry, not a second part", async (t) => {
    const dir = tempDir(t, "cli-retry");
    const db = join(dir, "j.db");
    const store = join(dir, "store");
    const file = join(dir, "p.csv");
    const run = async (argv: string[]) => {
      const stdout = new PassThrough();
      const chunks: Buffer[] = [];
      stdout.on("data", (c: Buffer) => chunks.push(c));
      const code = await runJournalCli(argv, { stdout, stderr: new PassThrough() });
      return { code, out: Buffer.concat(chunks).toString() };
    };
    writeFileSync(file, "a\r\n1\r\n");
    const first = await run(["publish", "--db", db, "--store", store, file, "--format", "csv"]);
    const retry = await run(["publish", "--db", db, "--store", store, file, "--format", "csv"]);
    assert.equal(first.code, 0);
    assert.equal(retry.code, 0);
    assert.equal(JSON.parse(retry.out).outputIdentifier, JSON.parse(first.out).outputIdentifier);
    assert.equal(JSON.parse(retry.out).created, false);
    const composed = await run(["compose", "--db", db, "--store", store]);
    assert.equal(composed.out, "a\r\n1\r\n");
    writeFileSync(file, "a\r\n2\r\n");
    const next = await run(["publish", "--db", db, "--store", store, file]);
    assert.equal(JSON.parse(next.out).outputIdentifier, "journal-p000001");
    assert.equal((await run(["compose", "--db", db, "--store", store])).out, "a\r\n1\r\n2\r\n");
  });

  test("two processes x 100 concurrent publishes: every part exactly once, head = composing all parts", async (t) => {
    const dir = tempDir(t, "two-proc");
    const db = join(dir, "j.db");
    const root = join(dir, "store");
    new SqliteJournalRegistry(db).close(); // the table exists before the race starts
    const kids = ["a", "b"].map((name) =>
      fork(PUBLISHER, [db, root, name, "100"], { stdio: ["ignore", "pipe", "inherit", "ipc"] }),
    );
    const outputs = await Promise.all(
      kids.map(
        (k) =>
          new Promise<string>((resolve, reject) => {
            let out = "";
            k.stdout!.on("data", (d: Buffer) => {
              out += d.toString();
            });
            k.once("exit", (code) =>
              code === 0 ? resolve(out) : reject(new Error(`publisher exited ${code}`)),
            );
          }),
      ),
    );
    // Each line: the part's text and the index it landed under.
    const landed = outputs
      .flatMap((o) => o.trim().split("\n"))
      .map((l) => JSON.parse(l) as { part: string; partIndex: number; created: boolean });
    assert.equal(landed.length, 200);
    assert.ok(landed.every((l) => l.created));
    landed.sort((x, y) => x.partIndex - y.partIndex);
    assert.deepEqual(
      landed.map((l) => l.partIndex),
      Array.from({ length: 200 }, (_, i) => i),
    );
    const registry = new SqliteJournalRegistry(db);
    try {
      const composed = await head(registry, new FsStore(root));
      const all = text(
        composeJournal(
          landed.map((l) => enc(l.part)),
          "csv",
        ),
      );
      assert.equal(composed, all);
      const lines = dataLines(composed);
      assert.equal(new Set(lines).size, 200);
    } finally {
      registry.close();
    }
  });
});

describe("journal edge cases: ids beyond 2^53, empty watermarks, multi-line cells, header merging", () => {
  test("advanceWatermark with no row yet saves nothing and says so", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const decision = await advanceWatermark(registry, {
      ids: [],
      facetCoverage: { total: 5, complete: true, maxId: 41 },
    });
    assert.equal(decision.watermark, 41);
    assert.equal(decision.patch, false);
    assert.equal(await registry.current(), undefined);
  });

  test("watermark ids beyond 2^53 stay exact through nextWatermark, publish, SQLite and the CLI", async (t) => {
    const big = 1767225600000000001n;
    assert.equal(nextWatermark(5, { ids: [big - 1n, big, 7] }).watermark, big);
    assert.equal(
      nextWatermark(big, { ids: [], facetCoverage: { total: 1, complete: true, maxId: big + 2n } }).watermark,
      big + 2n,
    );
    assert.equal(nextWatermark(null, { ids: [3n] }).watermark, 3, "a bigint a double holds becomes a number");

    const dir = tempDir(t, "watermark");
    const db = join(dir, "j.db");
    const registry = new SqliteJournalRegistry(db);
    const store = new MemoryStore();
    await publishPart({ registry, store, part: enc("a\r\n1\r\n"), format: "csv", watermark: big });
    assert.equal((await registry.current())!.config.watermark, big);
    await advanceWatermark(registry, {
      ids: [],
      facetCoverage: { total: 2, complete: true, maxId: big + 1n },
    });
    assert.equal((await registry.current())!.config.watermark, big + 1n);
    registry.close();

    const file = join(dir, "p.csv");
    writeFileSync(file, "a\r\n2\r\n");
    const stdout = new PassThrough();
    const code = await runJournalCli(
      ["publish", "--db", db, "--store", join(dir, "s"), file, "--watermark", "18446744073709551617"],
      { stdout, stderr: new PassThrough() },
    );
    assert.equal(code, 0);
    const reopened = new SqliteJournalRegistry(db);
    assert.equal((await reopened.current())!.config.watermark, 18446744073709551617n);
    reopened.close();
  });

  test("composeJournal refuses a quoted cell spanning lines instead of padding inside it", () => {
    const parts = [enc("a,b\r\n1,2\r\n"), enc('a\r\n"x\r\ny"\r\n')];
    assert.throws(() => composeJournal(parts, "csv"), { name: "PartRefused", reason: "line-break-in-cell" });
  });
});

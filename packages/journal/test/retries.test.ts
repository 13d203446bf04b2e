import assert from "node:assert/strict";
import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { PublishConflict } from "@zarr-stream/spec";
import { FsStore, MemoryStore } from "@zarr-stream/store";
import {
  composeHeadToStream,
  type JournalRegistry,
  nextWatermark,
  pruneJournal,
  publishPart,
  SqliteJournalRegistry,
} from "../src/index.js";
import { clock, enc, tempDir, text } from "./helpers.js";

const CLI = fileURLToPath(new URL("./fixtures/cli-child.js", import.meta.url));
const RACER = fileURLToPath(new URL("./fixtures/racer.js", import.meta.url));

async function head(registry: JournalRegistry, store: MemoryStore | FsStore): Promise<string> {
  const blocks: Uint8Array[] = [];
  await composeHeadToStream(registry, store, (b) => void blocks.push(b));
  return text(Buffer.concat(blocks));
}

/** `zstream journal …` in its own OS process. */
function cli(args: string[]): { code: number | null; out: Record<string, unknown>; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8" });
  return { code: r.status, out: r.stdout.trim() === "" ? {} : JSON.parse(r.stdout), stderr: r.stderr };
}

describe("retries are recognised by the part's own identity (deltaMd5 and index)", () => {
  test("CLI, two processes: re-running the publish that compacted is a retry, not a second copy", async (t) => {
    const dir = tempDir(t, "cli-compaction-retry");
    const db = join(dir, "j.db");
    const store = join(dir, "store");
    const files = ["a\r\n1\r\n", "a\r\n2\r\n", "a\r\n3\r\n"].map((p, i) => {
      const f = join(dir, `p${i}.csv`);
      writeFileSync(f, p);
      return f;
    });
    for (const f of files) {
      const r = cli(["publish", "--db", db, "--store", store, "--max-parts", "2", f]);
      assert.equal(r.code, 0, r.stderr);
    }
    const compose = () => spawnSync(process.execPath, [CLI, "compose", "--db", db, "--store", store]).stdout;
    const before = compose().toString();
    assert.equal(before, "a\r\n1\r\n2\r\n3\r\n");
    // The third publish compacted: its row's partMd5 is the composite's, its deltaMd5 the part's.
    const retry = cli(["publish", "--db", db, "--store", store, "--max-parts", "2", files[2]!]);
    assert.equal(retry.code, 0, retry.stderr);
    assert.deepEqual(
      { id: retry.out.outputIdentifier, created: retry.out.created, compacted: retry.out.compacted },
      { id: "journal-p000002", created: false, compacted: true },
    );
    // Under another --max-parts, and by its index, it is still the same row.
    const byIndex = cli(["publish", "--db", db, "--store", store, "--part-index", "2", files[2]!]);
    assert.equal(byIndex.code, 0, byIndex.stderr);
    assert.equal(byIndex.out.created, false);
    assert.equal(byIndex.out.rewritten, false);
    assert.equal(compose().toString(), before);
    const registry = new SqliteJournalRegistry(db);
    t.after(() => registry.close());
    assert.equal((await registry.rows()).length, 3);
  });

  test("a retry under another maxParts gets its row as registered: no compaction, prior rows stay live", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const now = clock();
    await publishPart({ registry, store, now, part: enc("a\r\n1\r\n"), format: "csv" });
    const first = await publishPart({ registry, store, now, part: enc("a\r\n2\r\n"), partIndex: 1 });
    const same = await publishPart({
      registry,
      store,
      now,
      part: enc("a\r\n2\r\n"),
      partIndex: 1,
      maxParts: 1,
    });
    assert.deepEqual(same, { row: first.row, created: false, compacted: false, rewritten: false });
    // Other bytes rewrite the row, still under the decision it was registered with (maxParts 64).
    const other = await publishPart({
      registry,
      store,
      now,
      part: enc("a\r\n9\r\n"),
      partIndex: 1,
      maxParts: 1,
    });
    assert.equal(other.rewritten, true);
    assert.equal(other.compacted, false);
    assert.equal(other.row.config.maxParts, 64);
    assert.deepEqual(other.row.config.artefactParts, [
      "journal/journal-p000000.csv",
      "journal/journal-p000001.csv",
    ]);
    const rows = await registry.rows();
    assert.deepEqual(
      rows.map((r) => r.config.artefactState),
      ["live", "live"],
    );
    assert.equal(await head(registry, store), "a\r\n1\r\n9\r\n");
  });

  test("a retry of a compaction row by index repairs a blob a crashed retry left wrong", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const now = clock();
    for (const p of ["a\r\n1\r\n", "a,b\r\n2,3\r\n"])
      await publishPart({ registry, store, now, part: enc(p), format: "csv", maxParts: 1 });
    const compaction = (await registry.current())!;
    assert.equal(compaction.config.partCount, 1);
    await store.put(compaction.config.partKey, enc("garbage\r\n"));
    const retry = await publishPart({ registry, store, now, part: enc("a,b\r\n2,3\r\n"), partIndex: 1 });
    assert.deepEqual([retry.created, retry.compacted, retry.rewritten], [false, true, true]);
    assert.deepEqual(retry.row, compaction);
    assert.equal(await head(registry, store), "a,b\r\n1,\r\n2,3\r\n");
  });
});

interface RaceOutcome {
  created?: boolean;
  outputIdentifier?: string;
  error?: string;
}

/**
 * Two OS processes publish the same bytes at once: each plans, then waits until both have planned the
 * same index, and only then uploads and registers.
 */
async function race(db: string, root: string, part: string, byContent: boolean): Promise<RaceOutcome[]> {
  const kids: ChildProcess[] = [0, 1].map(() =>
    fork(RACER, [db, root, part, byContent ? "1" : "0"], { stdio: ["ignore", "pipe", "inherit", "ipc"] }),
  );
  const outputs = kids.map((k) => {
    let out = "";
    k.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
    });
    return once(k, "exit").then(() => JSON.parse(out.trim()) as RaceOutcome);
  });
  await Promise.all(kids.map((k) => once(k, "message")));
  for (const k of kids) k.send("go");
  return Promise.all(outputs);
}

describe("two producers publishing identical bytes at once (two OS processes)", () => {
  test("library callers each get their own row; the head holds the data twice", async (t) => {
    const dir = tempDir(t, "race-library");
    const db = join(dir, "j.db");
    const root = join(dir, "store");
    const registry = new SqliteJournalRegistry(db);
    t.after(() => registry.close());
    await publishPart({ registry, store: new FsStore(root), part: enc("a\r\n0\r\n"), format: "csv" });
    const outcomes = await race(db, root, "a\r\n1\r\n", false);
    assert.deepEqual(outcomes.map((o) => [o.created, o.outputIdentifier]).sort(), [
      [true, "journal-p000001"],
      [true, "journal-p000002"],
    ]);
    assert.equal(await head(registry, new FsStore(root)), "a\r\n0\r\n1\r\n1\r\n");
  });

  test("retry-by-content callers (the CLI): one row and a DuplicatePublish, never a silent drop", async (t) => {
    const dir = tempDir(t, "race-cli");
    const db = join(dir, "j.db");
    const root = join(dir, "store");
    const registry = new SqliteJournalRegistry(db);
    t.after(() => registry.close());
    await publishPart({ registry, store: new FsStore(root), part: enc("a\r\n0\r\n"), format: "csv" });
    const outcomes = await race(db, root, "a\r\n1\r\n", true);
    const won = outcomes.filter((o) => o.created === true);
    const lost = outcomes.filter((o) => o.error !== undefined);
    assert.equal(won.length, 1, JSON.stringify(outcomes));
    assert.deepEqual(
      lost.map((o) => o.error),
      ["DuplicatePublish"],
    );
    assert.equal((await registry.rows()).length, 2);
    assert.equal(await head(registry, new FsStore(root)), "a\r\n0\r\n1\r\n");
  });

  test("register compares the head before the identifier: a stale plan is a conflict, not the other's row", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const first = await publishPart({ registry, store, part: enc("a\r\n1\r\n"), format: "csv" });
    const second = await publishPart({ registry, store, part: enc("a\r\n1\r\n") });
    // A publisher that planned journal-p000001 on row 1 (before `second` landed), with the same bytes.
    const stale = { ...second.row.config };
    await assert.rejects(registry.register(stale, [], first.row.id), PublishConflict);
    // Without a compare-and-swap, registration stays idempotent on the identifier.
    assert.deepEqual(await registry.register(stale), { row: second.row, created: false });
  });
});

describe("orphan blobs and the watermark", () => {
  test("a retry with other bytes after a crash before registering: prune removes the orphan it leaves", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const now = clock();
    await publishPart({ registry, store, now, part: enc("a\r\n1\r\n"), format: "csv" });
    const die = (step: string) => {
      if (step === "blob-written") throw new Error("killed");
    };
    await assert.rejects(publishPart({ registry, store, now, part: enc("a\r\n2\r\n"), onStep: die }));
    // The orphan is the next index's blob: a publish may be in flight, so prune leaves it.
    const early = await pruneJournal(registry, store, { cutoff: "2000-01-01T00:00:00Z" });
    assert.deepEqual(early.orphans, []);
    const retry = await publishPart({ registry, store, now, part: enc("a\r\n7\r\n") });
    assert.match(retry.row.config.partKey, /^journal\/journal-p000001-[0-9a-f]{16}\.csv$/);
    const dry = await pruneJournal(registry, store, { cutoff: "2000-01-01T00:00:00Z", dryRun: true });
    assert.deepEqual(dry.orphans, ["journal/journal-p000001.csv"]);
    assert.equal((await store.list("journal/")).length, 3);
    await pruneJournal(registry, store, { cutoff: "2000-01-01T00:00:00Z" });
    assert.deepEqual(await store.list("journal/"), ["journal/journal-p000000.csv", retry.row.config.partKey]);
    assert.equal(await head(registry, store), "a\r\n1\r\n7\r\n");
    // Blobs that are not part blobs, and the blob of a publish in flight above the head, are left alone.
    await store.put("journal/notes.txt", enc("x"));
    await store.put("journal/journal-p000002.csv", enc("a\r\n8\r\n"));
    assert.deepEqual((await pruneJournal(registry, store, { cutoff: "2000-01-01T00:00:00Z" })).orphans, []);
  });

  test("nextWatermark: ids at or below the watermark are not new, with or without facetCoverage", () => {
    assert.deepEqual(nextWatermark(10, { ids: [10, 7, 3] }), {
      watermark: 10,
      publish: false,
      patch: false,
      newIds: [],
    });
    assert.deepEqual(nextWatermark(10, { ids: [12, 9] }), {
      watermark: 12,
      publish: true,
      patch: false,
      newIds: [12],
    });
    assert.deepEqual(
      nextWatermark(10, { ids: [8], facetCoverage: { total: 3, complete: true, maxId: 15 } }),
      { watermark: 15, publish: false, patch: true, newIds: [] },
    );
    assert.deepEqual(nextWatermark(null, { ids: [2n, 1] }).newIds, [2n, 1]);
  });
});

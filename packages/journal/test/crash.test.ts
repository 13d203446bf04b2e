import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { composeHeadToStream, composeJournal, publishPart, SqliteJournalRegistry } from "../src/index.js";
import { enc, tempDir, text } from "./helpers.js";

const CHILD = fileURLToPath(new URL("./fixtures/crash-child.js", import.meta.url));
const COLS = ["t", "x", "y", "z", "w"];

/** Part i: header grows every other part, two rows, CRLF. */
function partText(i: number): string {
  const width = Math.min(COLS.length, 1 + Math.floor(i / 2));
  const header = COLS.slice(0, width).join(",");
  const rows = [0, 1].map((r) => Array.from({ length: width }, (_, c) => `${i}${r}${c}`).join(","));
  return [header, ...rows].join("\r\n") + "\r\n";
}

interface Journal {
  dir: string;
  db: string;
  store: string;
  files: string[];
}

function makeJournal(dir: string, nParts: number): Journal {
  mkdirSync(dir, { recursive: true });
  const files = Array.from({ length: nParts }, (_, i) => {
    const f = join(dir, `part-${i}.csv`);
    writeFileSync(f, partText(i));
    return f;
  });
  return { dir, db: join(dir, "journal.db"), store: join(dir, "store"), files };
}

function runChild(j: Journal, crashAt: string, maxParts: number, first: number, count: number) {
  return spawnSync(
    process.execPath,
    [CHILD, j.db, j.store, crashAt, String(maxParts), String(first), ...j.files.slice(first, first + count)],
    {
      encoding: "utf8",
    },
  );
}

/** The retry (or set-up) runs in-process: only the run that is killed needs its own process. */
async function publishInProcess(j: Journal, maxParts: number, first: number, count: number): Promise<void> {
  const registry = new SqliteJournalRegistry(j.db);
  try {
    const store = new FsStore(j.store);
    for (let i = first; i < first + count; i++) {
      await publishPart({ registry, store, part: enc(partText(i)), format: "csv", maxParts, partIndex: i });
    }
  } finally {
    registry.close();
  }
}

/** The newest row must compose to exactly the first `n` parts, and that n is returned. */
async function checkHead(j: Journal): Promise<number> {
  const registry = new SqliteJournalRegistry(j.db);
  try {
    const current = await registry.current();
    if (!current) return 0;
    const blocks: Uint8Array[] = [];
    await composeHeadToStream(registry, new FsStore(j.store), (b) => void blocks.push(b));
    const n = current.config.partIndex + 1;
    const expected = text(
      composeJournal(
        Array.from({ length: n }, (_, i) => enc(partText(i))),
        "csv",
      ),
    );
    assert.equal(
      text(Buffer.concat(blocks)),
      expected,
      `head ${current.config.outputIdentifier} is not parts 0..${n - 1}`,
    );
    const rows = await registry.rows();
    assert.deepEqual(
      rows.map((r) => r.config.partIndex),
      Array.from({ length: n }, (_, i) => i),
      "rows are not one per index",
    );
    for (const r of rows.slice(0, -1)) {
      const supersededBy = r.config.supersededByOutputId;
      if (r.config.artefactState === "superseded")
        assert.ok(supersededBy !== null && supersededBy > r.config.outputIdentifier);
    }
    return n;
  } finally {
    registry.close();
  }
}

const STEPS = ["planned", "blob-written", "tx-inserted", "tx-patched", "registered"] as const;

describe("seed 004 crash safety (SIGKILL of a child process)", () => {
  for (const [label, maxParts] of [
    ["publish", 0],
    ["compaction", 3],
  ] as const) {
    test(`${label}: a kill at any step leaves a correct newest row and a retry converges`, async (t) => {
      const root = tempDir(t, "crash");
      const base = makeJournal(join(root, "base"), 4);
      // Three parts in place; with maxParts 3 the fourth publish compacts.
      await publishInProcess(base, maxParts, 0, 3);
      for (const step of STEPS) {
        const dir = join(root, step);
        cpSync(base.dir, dir, { recursive: true });
        const j = { dir, db: join(dir, "journal.db"), store: join(dir, "store"), files: base.files };
        const crashed = runChild(j, step, maxParts, 3, 1);
        assert.equal(crashed.signal, "SIGKILL", `${step}: child was not killed (${crashed.stderr})`);
        const n = await checkHead(j);
        assert.equal(n, step === "registered" ? 4 : 3, `${step}: head after crash`);
        await publishInProcess(j, maxParts, 3, 1);
        assert.equal(await checkHead(j), 4, `${step}: retry did not converge`);
        const registry = new SqliteJournalRegistry(j.db);
        const current = (await registry.current())!.config;
        registry.close();
        assert.equal(current.journalCompactionCount, maxParts === 3 ? 1 : 0);
        assert.equal(current.partCount, maxParts === 3 ? 1 : 4);
      }
    });
  }

  test("kills at moments spread over a long publish run: every state is a prefix, a rerun converges", async (t) => {
    const j = makeJournal(tempDir(t, "crash-random"), 14);
    // Each rerun starts from part 0 (idempotent on the rows already there) and is killed a few
    // milliseconds after it reports its k-th publish, so kills land inside later publishes.
    let killedMidRun = 0;
    for (const [k, extraMs] of [
      [1, 0],
      [4, 2],
      [7, 5],
      [10, 9],
    ] as const) {
      const child = spawn(process.execPath, [CHILD, j.db, j.store, "none", "3", "0", ...j.files]);
      let seen = 0;
      child.stdout.on("data", (chunk: Buffer) => {
        seen += chunk
          .toString()
          .split("\n")
          .filter((l) => l.startsWith("published")).length;
        if (seen >= k) setTimeout(() => child.kill("SIGKILL"), extraMs);
      });
      const [, signal] = (await once(child, "exit")) as [number | null, string | null];
      if (signal === "SIGKILL") killedMidRun++;
      await checkHead(j);
    }
    assert.ok(killedMidRun >= 3, `only ${killedMidRun} of 4 runs were killed before finishing`);
    await publishInProcess(j, 3, 0, 14);
    assert.equal(await checkHead(j), 14);
  });
});

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { composeJournalToStream, publishPart, SqliteJournalRegistry, storePartSource } from "../src/index.js";
import { tempDir } from "./helpers.js";

const CHILD = fileURLToPath(new URL("./fixtures/memory-child.js", import.meta.url));
const MiB = 1 << 20;
/** The README's budget: RSS growth of a compaction or a session export, whatever the journal's size. */
const BUDGET_MIB = 32;
const PARTS = 8;
const PART_MIB = 26;

/**
 * Part p: a header of 2-4 columns (widths take turns, so the composite pads some lines and not others)
 * and PART_MIB of one 1 MiB block of CRLF lines repeated: generated at memory speed.
 */
function bigPart(p: number): Buffer {
  const width = 2 + (p % 3);
  const cols = Array.from({ length: width }, (_, c) => `c${c}`);
  const line = `${cols.map((_, c) => `${p}${"0".repeat(12)}${c}`).join(",")}\r\n`;
  const block = Buffer.from(line.repeat(Math.floor(MiB / line.length)));
  return Buffer.concat([
    Buffer.from(`${cols.join(",")}\r\n`),
    ...Array.from({ length: PART_MIB }, () => block),
  ]);
}

async function md5OfStream(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash("md5");
  for await (const chunk of stream) hash.update(chunk);
  return hash.digest("hex");
}

interface ChildReport {
  [field: string]: unknown;
  seconds: number;
  growthMiB: number;
}

function runChild(args: string[], env: Record<string, string> = {}): ChildReport {
  const r = spawnSync(process.execPath, ["--expose-gc", CHILD, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, unknown> & {
    baseline: number;
    peak: number;
    seconds: number;
  };
  return { ...out, growthMiB: (out.peak - out.baseline) / MiB };
}

/** Entries of a STORE zip: name, and the md5 of its data, read from the file in ranges. */
async function zipEntries(file: string): Promise<Map<string, string>> {
  const size = statSync(file).size;
  const fd = openSync(file, "r");
  const tail = Buffer.alloc(22);
  readSync(fd, tail, 0, 22, size - 22);
  assert.equal(tail.readUInt32LE(0), 0x06054b50);
  const count = tail.readUInt16LE(10);
  const central = Buffer.alloc(tail.readUInt32LE(12));
  readSync(fd, central, 0, central.length, tail.readUInt32LE(16));
  const entries = new Map<string, string>();
  for (let at = 0, i = 0; i < count; i++) {
    assert.equal(central.readUInt32LE(at), 0x02014b50);
    const nameLength = central.readUInt16LE(at + 28);
    const offset = central.readUInt32LE(at + 42);
    const name = central.toString("utf8", at + 46, at + 46 + nameLength);
    const local = Buffer.alloc(30);
    readSync(fd, local, 0, 30, offset);
    const start = offset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
    const dataLength = central.readUInt32LE(at + 24);
    const data = dataLength === 0 ? [] : createReadStream(file, { start, end: start + dataLength - 1 });
    entries.set(name, await md5OfStream(data as AsyncIterable<Uint8Array>));
    at += 46 + nameLength;
  }
  return entries;
}

test(`compaction and session export of a ${PARTS * PART_MIB} MiB journal stay within ${BUDGET_MIB} MiB of RSS growth`, async (t) => {
  const dir = tempDir(t, "memory");
  const db = join(dir, "j.db");
  const root = join(dir, "store");
  const registry = new SqliteJournalRegistry(db);
  t.after(() => registry.close());
  const store = new FsStore(root);
  const t0 = performance.now();
  for (let p = 0; p < PARTS; p++) await publishPart({ registry, store, part: bigPart(p), format: "csv" });
  const generated = (performance.now() - t0) / 1000;
  const head = (await registry.current())!.config;
  assert.equal(head.partCount, PARTS);

  // What the compaction must write: the head's parts and the new one, composed here as a stream.
  const last = new TextEncoder().encode("c0,c1\r\nlast,row\r\n");
  const expected = createHash("md5");
  await composeJournalToStream(
    [...head.artefactParts.map((k) => storePartSource(store, k)), last],
    (b) => void expected.update(b),
    { format: "csv", csvHeaders: head.csvHeaders },
  );
  const compaction = runChild(["compact", db, root], { MAX_PARTS: String(PARTS) });
  assert.equal(compaction.compacted, true);
  assert.equal(compaction.partMd5, expected.digest("hex"));
  const blob = await md5OfStream(storePartSource(store, compaction.partKey as string)());
  assert.equal(blob, compaction.partMd5);

  const zip = join(dir, "session.zip");
  const exported = runChild(["export", db, root, zip]);
  assert.equal(statSync(zip).size, exported.bytes);
  const entries = await zipEntries(zip);
  const rows = await registry.rows();
  assert.equal(entries.size, rows.length + 1);
  for (const r of rows) assert.equal(entries.get(`parts/${r.config.outputIdentifier}.csv`), r.config.partMd5);

  const journalMiB = rows.reduce((n, r) => n + r.config.partSize, 0) / MiB;
  console.log(
    `# journal of ${PARTS} parts, ${(PARTS * PART_MIB).toFixed(0)} MiB, published in ${generated.toFixed(1)} s; ` +
      `compaction ${compaction.seconds.toFixed(1)} s, RSS growth ${compaction.growthMiB.toFixed(1)} MiB; ` +
      `export of ${journalMiB.toFixed(0)} MiB of parts ${exported.seconds.toFixed(1)} s, RSS growth ${exported.growthMiB.toFixed(1)} MiB`,
  );
  assert.ok(
    compaction.growthMiB <= BUDGET_MIB,
    `compaction grew RSS by ${compaction.growthMiB.toFixed(1)} MiB`,
  );
  assert.ok(exported.growthMiB <= BUDGET_MIB, `export grew RSS by ${exported.growthMiB.toFixed(1)} MiB`);
});

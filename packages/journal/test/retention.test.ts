import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { JournalRowConfig } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import {
  advanceWatermark,
  JournalError,
  type JournalRow,
  nextWatermark,
  planArchive,
  planRetention,
  pruneJournal,
  publishPart,
  SqliteJournalRegistry,
} from "../src/index.js";
import { clock, enc } from "./helpers.js";

function row(id: number, over: Partial<JournalRowConfig> = {}): JournalRow {
  const key = `journal/journal-p${String(id).padStart(6, "0")}.csv`;
  return {
    id,
    config: {
      outputIdentifier: `journal-p${String(id).padStart(6, "0")}`,
      journalFormat: "csv",
      partIndex: id,
      partKey: key,
      partSize: 1,
      partMd5: "0".repeat(32),
      csvHeaders: ["a"],
      csvHeaderCount: 1,
      artefactParts: [key],
      partCount: 1,
      maxParts: 64,
      journalCompactionCount: 0,
      watermark: null,
      artefactState: "live",
      retentionEligible: false,
      supersededAtUtc: null,
      supersededReason: null,
      supersededByOutputId: null,
      createdAtUtc: `2026-01-0${id + 1}T00:00:00Z`,
      ...over,
    },
  };
}

const superseded = (at: string | null) => ({
  artefactState: "superseded" as const,
  retentionEligible: true,
  supersededAtUtc: at,
  supersededReason: "journal-compaction",
});

describe("seed 004 retention", () => {
  test("never prunes a row the current output's artefactParts reference, even if marked superseded", () => {
    const rows = [
      row(0, superseded("2026-01-01T00:00:00Z")),
      row(1, superseded("2026-01-01T00:00:00Z")),
      row(2, { artefactParts: ["journal/journal-p000000.csv", "journal/journal-p000002.csv"], partCount: 2 }),
    ];
    const plan = planRetention(rows, "2026-06-01T00:00:00Z");
    assert.deepEqual(
      plan.prune.map((r) => r.id),
      [1],
    );
    assert.deepEqual(
      plan.keep.map((k) => [k.row.id, k.reason]),
      [
        [0, "referenced-by-current"],
        [2, "current"],
      ],
    );
  });

  test("a superseded row is due only when (supersededAtUtc ?? createdAtUtc) <= cutoff", () => {
    const rows = [
      row(0, superseded("2026-03-01T00:00:00Z")),
      row(1, superseded(null)), // created 2026-01-02
      row(2, superseded("2026-02-01T00:00:00Z")),
      row(3),
      row(4),
    ];
    const plan = planRetention(rows, "2026-02-01T00:00:00Z");
    assert.deepEqual(
      plan.prune.map((r) => r.id),
      [1, 2],
    );
    assert.deepEqual(
      plan.keep.map((k) => [k.row.id, k.reason]),
      [
        [0, "too-recent"],
        [3, "live"],
        [4, "current"],
      ],
    );
    assert.throws(() => planRetention(rows, "yesterday"), JournalError);
  });

  test("archive keeps the keeper and the rows its configuration references", () => {
    const rows = [
      row(0),
      row(1),
      row(2, { artefactParts: ["journal/journal-p000001.csv", "journal/journal-p000002.csv"], partCount: 2 }),
    ];
    const { keep, archive } = planArchive(rows, "journal-p000002");
    assert.deepEqual(
      keep.map((r) => r.id),
      [1, 2],
    );
    assert.deepEqual(
      archive.map((r) => r.id),
      [0],
    );
    assert.throws(() => planArchive(rows, "journal-p000009"), JournalError);
  });

  test("pruneJournal deletes due compaction-superseded rows and blobs; dry run deletes nothing", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const now = clock(Date.parse("2026-01-01T00:00:00Z"));
    for (let i = 0; i < 4; i++) {
      await publishPart({ registry, store, now, part: enc(`a\r\n${i}\r\n`), format: "csv", maxParts: 2 });
    }
    // p0,p1 superseded by the compaction p2 (at 00:00:02); p3 appended after it.
    const dry = await pruneJournal(registry, store, { cutoff: "2026-01-01T00:00:02Z", dryRun: true });
    assert.deepEqual(
      dry.prune.map((r) => r.config.outputIdentifier),
      ["journal-p000000", "journal-p000001"],
    );
    assert.equal((await store.list("journal/")).length, 4);
    const early = await pruneJournal(registry, store, { cutoff: "2026-01-01T00:00:01Z" });
    assert.equal(early.prune.length, 0);
    await pruneJournal(registry, store, { cutoff: "2026-01-01T00:00:02Z" });
    assert.deepEqual(await store.list("journal/"), [
      "journal/journal-p000002.csv",
      "journal/journal-p000003.csv",
    ]);
    assert.deepEqual(
      (await registry.rows()).map((r) => r.config.outputIdentifier),
      ["journal-p000002", "journal-p000003"],
    );
  });
});

describe("seed 004 facet-filtered watermark", () => {
  test("raises the watermark to maxId of a complete facet and publishes when blobs were returned", () => {
    const d = nextWatermark(10, { ids: [14, 12], facetCoverage: { total: 9, complete: 9, maxId: 20 } });
    assert.deepEqual(d, { watermark: 20, publish: true, patch: false, newIds: [14, 12] });
  });

  test("an empty filtered listing moves the watermark forward without publishing", () => {
    const d = nextWatermark(10, { ids: [], facetCoverage: { total: 4, complete: true, maxId: 31 } });
    assert.deepEqual(d, { watermark: 31, publish: false, patch: true, newIds: [] });
    assert.deepEqual(nextWatermark(31, { ids: [], facetCoverage: { total: 0, complete: 0, maxId: 31 } }), {
      watermark: 31,
      publish: false,
      patch: false,
      newIds: [],
    });
  });

  test("an incomplete facet or an older API (no coverage) only reaches the newest returned id", () => {
    assert.equal(
      nextWatermark(5, { ids: [7], facetCoverage: { total: 9, complete: 8, maxId: 20 } }).watermark,
      7,
    );
    assert.equal(nextWatermark(5, { ids: [7] }).watermark, 7);
    assert.equal(nextWatermark(null, { ids: [] }).watermark, null);
  });

  test("advanceWatermark patches the current row and registers nothing new", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    await publishPart({ registry, store, part: enc('{"a":1}\n'), format: "ndjson", watermark: 3 });
    const d = await advanceWatermark(registry, {
      ids: [],
      facetCoverage: { total: 2, complete: 2, maxId: 40 },
    });
    assert.equal(d.patch, true);
    const rows = await registry.rows();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.config.watermark, 40);
    const next = await publishPart({ registry, store, part: enc('{"a":2}\n') });
    assert.equal(next.row.config.watermark, 40);
  });
});

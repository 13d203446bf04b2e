import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { MemoryStore } from "@zarr-stream/store";
import fc from "fast-check";
import {
  composeHeadToStream,
  composeJournal,
  JournalError,
  type JournalRegistry,
  publishPart,
  SqliteJournalRegistry,
} from "../src/index.js";
import { clock, enc, text } from "./helpers.js";

async function head(registry: JournalRegistry, store: MemoryStore): Promise<string> {
  const blocks: Uint8Array[] = [];
  await composeHeadToStream(registry, store, (b) => void blocks.push(b));
  return text(Buffer.concat(blocks));
}

function journal() {
  return { registry: new SqliteJournalRegistry(":memory:"), store: new MemoryStore(), now: clock() };
}

describe("seed 004 producer", () => {
  test("each publish is one row: next index, cumulative head, blob = the new part", async () => {
    const { registry, store, now } = journal();
    const r0 = await publishPart({ registry, store, now, part: enc("a\r\n1\r\n"), format: "csv" });
    const r1 = await publishPart({ registry, store, now, part: enc("a,b\r\n2,3\r\n"), watermark: 17 });
    assert.equal(r0.row.config.outputIdentifier, "journal-p000000");
    assert.equal(r1.row.config.outputIdentifier, "journal-p000001");
    assert.deepEqual(r1.row.config.artefactParts, [
      "journal/journal-p000000.csv",
      "journal/journal-p000001.csv",
    ]);
    assert.deepEqual(r1.row.config.csvHeaders, ["a", "b"]);
    assert.equal(r1.row.config.csvHeaderCount, 2);
    assert.equal(r1.row.config.partCount, 2);
    assert.equal(r1.row.config.maxParts, 64);
    assert.equal(r1.row.config.watermark, 17);
    assert.equal(r1.row.config.partSize, 10);
    assert.equal(r1.row.config.partMd5, createHash("md5").update("a,b\r\n2,3\r\n").digest("hex"));
    assert.equal(text((await store.get("journal/journal-p000001.csv"))!), "a,b\r\n2,3\r\n");
    assert.equal(await head(registry, store), "a,b\r\n1,\r\n2,3\r\n");
    assert.equal((await registry.rows()).length, 2);
  });

  test("idempotent on outputIdentifier: a retry with the same bytes gets the earlier row back", async () => {
    const { registry, store, now } = journal();
    const first = await publishPart({
      registry,
      store,
      now,
      part: enc("a\r\n1\r\n"),
      format: "csv",
      partIndex: 0,
    });
    const retry = await publishPart({
      registry,
      store,
      now,
      part: enc("a\r\n1\r\n"),
      format: "csv",
      partIndex: 0,
    });
    assert.equal(retry.created, false);
    assert.equal(retry.rewritten, false);
    assert.deepEqual(retry.row, first.row);
    assert.equal((await registry.rows()).length, 1);
  });

  test("a retry whose partMd5 differs overwrites the same key and patches the row", async () => {
    const { registry, store, now } = journal();
    await publishPart({ registry, store, now, part: enc("a\r\n1\r\n"), format: "csv" });
    const first = await publishPart({ registry, store, now, part: enc("a\r\n2\r\n"), partIndex: 1 });
    const retry = await publishPart({ registry, store, now, part: enc("a,b\r\n2,9\r\n"), partIndex: 1 });
    assert.equal(retry.rewritten, true);
    assert.equal(retry.row.config.partKey, first.row.config.partKey);
    assert.notEqual(retry.row.config.partMd5, first.row.config.partMd5);
    const stored = (await registry.find("journal-p000001"))!.config;
    assert.deepEqual(stored.csvHeaders, ["a", "b"]);
    assert.equal(stored.partMd5, retry.row.config.partMd5);
    assert.equal(stored.createdAtUtc, first.row.config.createdAtUtc);
    assert.equal((await registry.rows()).length, 2);
    assert.equal(await head(registry, store), "a,b\r\n1,\r\n2,9\r\n");
  });

  test("a retry converges after an earlier retry died between overwriting the blob and patching the row", async () => {
    const { registry, store, now } = journal();
    const first = await publishPart({
      registry,
      store,
      now,
      part: enc("a\r\n1\r\n"),
      format: "csv",
      partIndex: 0,
    });
    const die = (step: string) => {
      if (step === "blob-written") throw new Error("killed");
    };
    await assert.rejects(
      publishPart({ registry, store, now, part: enc("a\r\n2\r\n"), partIndex: 0, onStep: die }),
    );
    assert.equal(text((await store.get(first.row.config.partKey))!), "a\r\n2\r\n");
    // The next retry carries the original bytes: the row is right, the blob is repaired.
    const retry = await publishPart({ registry, store, now, part: enc("a\r\n1\r\n"), partIndex: 0 });
    assert.equal(retry.rewritten, true);
    assert.deepEqual(retry.row, first.row);
    assert.equal(await head(registry, store), "a\r\n1\r\n");
  });

  test("a retry may not rewrite a row that is no longer the current output", async () => {
    const { registry, store, now } = journal();
    await publishPart({ registry, store, now, part: enc("a\r\n1\r\n"), format: "csv" });
    await publishPart({ registry, store, now, part: enc("a\r\n2\r\n") });
    await assert.rejects(
      publishPart({ registry, store, now, part: enc("a\r\n7\r\n"), partIndex: 0 }),
      (e: unknown) => e instanceof JournalError && e.reason === "part-index",
    );
    await assert.rejects(
      publishPart({ registry, store, now, part: enc("a\r\n7\r\n"), partIndex: 5 }),
      (e: unknown) => e instanceof JournalError && e.reason === "part-index",
    );
  });

  test("compaction at partCount >= maxParts: one part under the widest header, prior rows superseded", async () => {
    const { registry, store, now } = journal();
    await publishPart({ registry, store, now, part: enc("a\r\n1\r\n"), format: "csv", maxParts: 2 });
    await publishPart({ registry, store, now, part: enc("a,b\r\n2,3\r\n") });
    const c = await publishPart({ registry, store, now, part: enc("a,b,c\r\n4,5,6\r\n") });
    assert.equal(c.compacted, true);
    assert.deepEqual(c.row.config.artefactParts, ["journal/journal-p000002.csv"]);
    assert.equal(c.row.config.partCount, 1);
    assert.equal(c.row.config.journalCompactionCount, 1);
    assert.equal(text((await store.get(c.row.config.partKey))!), "a,b,c\r\n1,,\r\n2,3,\r\n4,5,6\r\n");
    const rows = await registry.rows();
    for (const r of rows.slice(0, 2)) {
      assert.equal(r.config.artefactState, "superseded");
      assert.equal(r.config.retentionEligible, true);
      assert.equal(r.config.supersededReason, "journal-compaction");
      assert.equal(r.config.supersededByOutputId, "journal-p000002");
      assert.equal(r.config.supersededAtUtc, c.row.config.createdAtUtc);
    }
    const after = await publishPart({ registry, store, now, part: enc("a,b,c\r\n7,8,9\r\n") });
    assert.equal(after.compacted, false);
    assert.equal(after.row.config.partCount, 2);
    assert.equal(await head(registry, store), "a,b,c\r\n1,,\r\n2,3,\r\n4,5,6\r\n7,8,9\r\n");
  });

  test("maxParts 0 disables compaction", async () => {
    const { registry, store, now } = journal();
    for (let i = 0; i < 5; i++) {
      const r = await publishPart({
        registry,
        store,
        now,
        part: enc(`{"i":${i}}\n`),
        format: "ndjson",
        maxParts: 0,
      });
      assert.equal(r.compacted, false);
      assert.equal(r.row.config.partCount, i + 1);
    }
  });

  test("bad input is refused before any I/O", async () => {
    const { registry, store, now } = journal();
    const cases: [Parameters<typeof publishPart>[0], string][] = [
      [{ registry, store, now, part: enc("a\r\n1\r\n") }, "format"],
      [{ registry, store, now, part: enc("a\r\n1\r\n"), format: "csv", maxParts: -1 }, "argument"],
      [{ registry, store, now, part: enc('a\r\n"1\r\n2"\r\n'), format: "csv" }, "line-break-in-cell"],
      [{ registry, store, now, part: enc("a\r\n1\r2\r\n"), format: "csv" }, "bare-cr"],
    ];
    for (const [options, reason] of cases) {
      await assert.rejects(
        publishPart(options),
        (e: unknown) => e instanceof JournalError && e.reason === reason,
      );
    }
    assert.deepEqual(await store.list(""), []);
    await publishPart({ registry, store, now, part: enc("a,b\r\n1,2\r\n"), format: "csv" });
    await assert.rejects(
      publishPart({ registry, store, now, part: enc("b,a\r\n2,1\r\n") }),
      (e: unknown) => e instanceof JournalError && e.reason === "header-prefix",
    );
    await assert.rejects(
      publishPart({ registry, store, now, part: enc("{}\n"), format: "ndjson" }),
      (e: unknown) => e instanceof JournalError && e.reason === "format",
    );
    assert.deepEqual(await store.list(""), ["journal/journal-p000000.csv"]);
  });
});

const COLUMNS = ["t", "lat", "lon", "sst", "q,c", "flag"];

/** Parts whose headers only grow: each is a prefix of COLUMNS at least as wide as the previous one. */
const partsArb = fc
  .array(fc.record({ grow: fc.nat(2), rows: fc.nat(4), lf: fc.boolean(), noFinal: fc.boolean() }), {
    minLength: 1,
    maxLength: 9,
  })
  .map((specs) => {
    let width = 0;
    return specs.map(({ grow, rows, lf, noFinal }, p) => {
      width = Math.min(COLUMNS.length, width + grow);
      if (width === 0) return "";
      const eol = lf ? "\n" : "\r\n";
      const header = COLUMNS.slice(0, width)
        .map((c) => (c.includes(",") ? `"${c}"` : c))
        .join(",");
      const lines = [header];
      for (let r = 0; r < rows; r++)
        lines.push(Array.from({ length: width }, (_, c) => `${p}.${r}.${c}`).join(","));
      const body = lines.join(eol);
      return noFinal ? body : body + eol;
    });
  });

describe("seed 004 property: publish/compaction equals composing all parts at once", () => {
  test("random growing headers, part sizes and maxParts (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(partsArb, fc.nat(4), async (parts, maxParts) => {
        const { registry, store, now } = journal();
        try {
          for (const p of parts)
            await publishPart({ registry, store, now, part: enc(p), format: "csv", maxParts });
          const expected = text(composeJournal(parts.map(enc), "csv"));
          assert.equal(await head(registry, store), expected);
          const current = (await registry.current())!.config;
          if (maxParts > 0)
            assert.ok(current.partCount <= maxParts, `partCount ${current.partCount} > ${maxParts}`);
          else assert.equal(current.partCount, parts.length);
        } finally {
          registry.close();
        }
      }),
      { numRuns: 150 },
    );
  });

  test("NDJSON: publish/compaction equals concatenation (fast-check)", async () => {
    const ndjson = fc.array(fc.array(fc.nat(99), { maxLength: 4 }), { minLength: 1, maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(ndjson, fc.nat(3), async (parts, maxParts) => {
        const { registry, store, now } = journal();
        try {
          const raw = parts.map((rows) => rows.map((v) => `{"v":${v}}`).join("\n"));
          for (const p of raw)
            await publishPart({ registry, store, now, part: enc(p), format: "ndjson", maxParts });
          const expected = raw
            .filter((p) => p !== "")
            .map((p) => `${p}\n`)
            .join("");
          assert.equal(await head(registry, store), expected);
        } finally {
          registry.close();
        }
      }),
      { numRuns: 100 },
    );
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemoryStore } from "@zarr-stream/store";
import fc from "fast-check";
import {
  composeHeadToStream,
  composeJournal,
  composeJournalAsync,
  type JournalRegistry,
  PartRefused,
  type PartRule,
  publishPart,
  SqliteJournalRegistry,
  storePartSource,
} from "../src/index.js";
import { clock, enc, text } from "./helpers.js";

const BOM = "\uFEFF";

/** What a composer did: its bytes, or the error it refused with (class name and rule). */
type Outcome = { bytes: string } | { refused: string };

async function outcome(run: () => Uint8Array | Promise<Uint8Array>): Promise<Outcome> {
  try {
    return { bytes: text(await run()) };
  } catch (e) {
    if (!(e instanceof Error) || !("reason" in e)) throw e;
    return { refused: `${e.name}:${String(e.reason)}` };
  }
}

/** A source that yields `bytes` cut at the given points (sorted, deduplicated, within the part). */
function cutAt(bytes: Uint8Array, cuts: number[]) {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  return async function* () {
    let from = 0;
    for (const p of [...points, bytes.length]) {
      yield bytes.subarray(from, p);
      from = p;
    }
  };
}

// --- Raw CSV parts, hostile ones included: quoted cells with separators, quotes, CR and LF inside,
// stray quotes, BOMs, ragged widths, every terminator (CRLF, LF, a bare CR, none at the end).
const rawCell = fc.record({
  text: fc.string({ unit: fc.constantFrom("a", "é", " ", ",", '"', "\r", "\n", "1"), maxLength: 4 }),
  quoted: fc.boolean(),
});
const rawLine = fc.record({
  cells: fc.array(rawCell, { maxLength: 4 }),
  end: fc.constantFrom("\r\n", "\r\n", "\n", "\r", ""),
});
const rawCsvPart = fc
  .record({ bom: fc.boolean(), lines: fc.array(rawLine, { maxLength: 5 }) })
  .map(({ bom, lines }) => {
    const body = lines
      .map(
        (l) =>
          l.cells.map((c) => (c.quoted ? `"${c.text.replaceAll('"', '""')}"` : c.text)).join(",") + l.end,
      )
      .join("");
    return (bom ? BOM : "") + body;
  });
const rawNdjsonPart = fc
  .record({
    bom: fc.boolean(),
    body: fc.string({ unit: fc.constantFrom("{", "}", "1", '"', "\r", "\n", "\r\n", BOM), maxLength: 12 }),
  })
  .map(({ bom, body }) => (bom ? BOM : "") + body);

describe("the two composers agree byte for byte, or both refuse by the same rule (fast-check)", () => {
  for (const [format, partArb] of [
    ["csv", rawCsvPart],
    ["ndjson", rawNdjsonPart],
  ] as const) {
    test(`${format}: in-memory vs streaming over arbitrary chunk boundaries and store ranges`, async () => {
      const cuts = fc.array(fc.nat(60), { maxLength: 6 });
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(partArb, cuts), { minLength: 1, maxLength: 4 }), async (spec) => {
          const parts = spec.map(([p]) => enc(p));
          const whole = await outcome(() => composeJournal(parts, format));
          const streamed = await outcome(() =>
            composeJournalAsync(
              spec.map(([, c], i) => cutAt(parts[i]!, c)),
              { format },
            ),
          );
          assert.deepEqual(streamed, whole);
          const store = new MemoryStore();
          for (const [i, p] of parts.entries()) await store.put(`p${i}`, p);
          const fromStore = await outcome(() =>
            composeJournalAsync(
              parts.map((_, i) => storePartSource(store, `p${i}`, 3)),
              { format },
            ),
          );
          assert.deepEqual(fromStore, whole);
        }),
        { numRuns: 400 },
      );
    });
  }
});

// --- Structured CSV parts for the producer: the test knows each part's header cells and row texts, so
// it can predict acceptance and write the seed 004 composite itself.
const COLUMNS = ["t", "lat,lon", 'say "hi"', "", "é", "flag"];
type Hostile =
  | "none"
  | "empty-header"
  | "line-break-in-cell"
  | "bare-cr"
  | "row-width"
  | "header-encoding"
  | "foreign";

interface CsvSpec {
  raw: Uint8Array;
  /** The header cells (what the producer must read), the data lines' texts, and the rule it breaks. */
  header: string[];
  rows: string[];
  breaks: PartRule | undefined;
}

function spell(cell: string, quote: boolean, alone: boolean): string {
  const must = /[",\r\n]/.test(cell) || cell.startsWith('"') || (alone && cell === "");
  return must || quote ? `"${cell.replaceAll('"', '""')}"` : cell;
}

const valueArb = fc.string({ unit: fc.constantFrom("1", "x", ",", '"', " ", "é"), maxLength: 4 });
const csvSpecArb = fc
  .record({
    width: fc.nat(COLUMNS.length),
    rows: fc.array(
      fc.array(fc.tuple(valueArb, fc.boolean()), { minLength: COLUMNS.length, maxLength: COLUMNS.length }),
      {
        maxLength: 3,
      },
    ),
    quoteHeader: fc.array(fc.boolean(), { minLength: COLUMNS.length, maxLength: COLUMNS.length }),
    ends: fc.array(fc.constantFrom("\r\n", "\n"), { minLength: 4, maxLength: 4 }),
    last: fc.constantFrom("\r\n", "\n", "", "\r"),
    bom: fc.boolean(),
    hostile: fc.constantFrom<Hostile>(
      "none",
      "none",
      "none",
      "none",
      "empty-header",
      "line-break-in-cell",
      "bare-cr",
      "row-width",
      "header-encoding",
      "foreign",
    ),
  })
  .map((g): CsvSpec => {
    let header =
      g.hostile === "foreign" ? ["zz", ...COLUMNS.slice(1, Math.max(1, g.width))] : COLUMNS.slice(0, g.width);
    if (g.hostile === "empty-header") header = [];
    let rows = g.rows.map((r) =>
      r
        .slice(0, Math.max(header.length, g.hostile === "empty-header" ? 2 : 0))
        .map(([v, q]) => spell(v, q, header.length === 1))
        .join(","),
    );
    if (header.length === 0 && g.hostile !== "empty-header") rows = [];
    let breaks: PartRule | undefined;
    if (g.hostile === "empty-header") {
      if (rows.length === 0) rows = ["1,2"];
      breaks = "empty-header";
    } else if (header.length > 0 && g.hostile !== "none" && g.hostile !== "foreign") {
      if (rows.length === 0) rows = [header.map(() => "1").join(",")];
      const r = rows.length - 1;
      if (g.hostile === "line-break-in-cell") rows[r] = `"a\r\nb"${rows[r]!.slice(rows[r]!.indexOf(","))}`;
      if (g.hostile === "bare-cr") rows[r] = `a\rb${rows[r]!.startsWith(",") ? "" : ","}${rows[r]}`;
      if (g.hostile === "row-width") rows[r] = `${rows[r]},extra`;
      breaks = g.hostile === "header-encoding" ? "header-encoding" : g.hostile;
      if (g.hostile === "line-break-in-cell" && header.length === 1) rows[r] = '"a\r\nb"';
    }
    const headerLine = header.map((c, i) => spell(c, g.quoteHeader[i]!, header.length === 1)).join(",");
    const lines = [headerLine, ...rows];
    const ends = lines.map((_, i) => (i === lines.length - 1 ? g.last : g.ends[i % g.ends.length]!));
    // A part with nothing in it at all is one that decoded nothing: no header line either.
    const body = lines.length === 1 && headerLine === "" ? "" : lines.map((l, i) => l + ends[i]).join("");
    let raw = enc((g.bom ? BOM : "") + body);
    if (breaks === "header-encoding") {
      raw = Buffer.concat([Buffer.from([0xc3, 0x28]), raw]);
    }
    return { raw, header, rows, breaks };
  });

function isPrefix(a: readonly string[], b: readonly string[]): boolean {
  return a.length <= b.length && a.every((c, i) => b[i] === c);
}

/** Seed 004's rule, written out: the union header line, then every part's lines padded to its width. */
function seedComposite(accepted: readonly CsvSpec[]): string {
  const union = accepted.reduce<string[]>((u, p) => (p.header.length > u.length ? p.header : u), []);
  if (union.length === 0) return "";
  const headerLine = union.map((c) => spell(c, false, union.length === 1)).join(",");
  const lines = accepted.flatMap((p) =>
    p.rows.map((r) => `${r}${",".repeat(union.length - p.header.length)}`),
  );
  return [headerLine, ...lines].map((l) => `${l}\r\n`).join("");
}

/** The current output composed, or "" before any row (a first part that was refused). */
async function headOf(registry: JournalRegistry, store: MemoryStore): Promise<string> {
  if ((await registry.current()) === undefined) return "";
  const blocks: Uint8Array[] = [];
  await composeHeadToStream(registry, store, (b) => void blocks.push(b));
  return text(Buffer.concat(blocks));
}

describe("whatever publishPart accepts composes, now and after every later publish and compaction", () => {
  test("CSV: random parts (hostile ones included) at random maxParts; head = seed 004's composite (fast-check)", async () => {
    const step = fc.record({
      part: csvSpecArb,
      maxParts: fc.nat(4),
      retry: fc.constantFrom("none", "content", "index"),
    });
    // What the runs went through, so the test fails if the generator stops reaching a case.
    const seen = new Map<string, number>();
    const count = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        const registry = new SqliteJournalRegistry(":memory:");
        const store = new MemoryStore();
        const now = clock();
        const accepted: CsvSpec[] = [];
        try {
          for (const { part, maxParts, retry } of steps) {
            const union = accepted.reduce<string[]>(
              (u, p) => (p.header.length > u.length ? p.header : u),
              [],
            );
            const expected =
              part.breaks ??
              (isPrefix(part.header, union) || isPrefix(union, part.header) ? undefined : "header-prefix");
            const keys = await store.list("");
            const o = { registry, store, now, part: part.raw, format: "csv" as const, maxParts };
            if (expected !== undefined) {
              await assert.rejects(
                publishPart(o),
                (e: unknown) => e instanceof PartRefused && e.reason === expected,
                `expected ${expected}`,
              );
              assert.deepEqual(await store.list(""), keys, "a refused part wrote nothing");
              count(expected);
            } else {
              const r = await publishPart(o);
              assert.equal(r.created, true);
              accepted.push(part);
              const blob = text((await store.get(r.row.config.partKey))!);
              // Invariants 2 and 4 hold for the stored blob itself: CRLF lines, the last one terminated.
              assert.ok(!/(^|[^\r])\n|\r(?!\n)/.test(blob), JSON.stringify(blob));
              assert.ok(!blob.startsWith(BOM), "a stored part starts with no BOM");
              if (r.compacted) assert.equal(blob, seedComposite(accepted), "a compaction's blob is the head");
              count(r.compacted ? "compaction" : "appended");
              if (part.raw[0] === 0xef) count("bom");
              if (retry !== "none") {
                const again = await publishPart({
                  ...o,
                  retryByContent: retry === "content",
                  partIndex: retry === "index" ? r.row.config.partIndex : undefined,
                  maxParts: (maxParts + 1) % 5,
                });
                assert.deepEqual([again.created, again.rewritten, again.row], [false, false, r.row]);
                count(`retry-${retry}${r.compacted ? "-after-compaction" : ""}`);
              }
            }
            assert.equal(await headOf(registry, store), seedComposite(accepted));
          }
          // Every reader: the in-memory composer over the current row's blobs gives the same bytes.
          const current = await registry.current();
          if (current !== undefined) {
            const blobs = await Promise.all(
              current.config.artefactParts.map(async (k) => (await store.get(k))!),
            );
            const inMemory = composeJournal(blobs, "csv", { csvHeaders: current.config.csvHeaders });
            assert.equal(text(inMemory), seedComposite(accepted));
          }
        } finally {
          registry.close();
        }
      }),
      { numRuns: 150 },
    );
    for (const what of [
      "empty-header",
      "line-break-in-cell",
      "bare-cr",
      "row-width",
      "header-encoding",
      "header-prefix",
      "compaction",
      "appended",
      "bom",
      "retry-content-after-compaction",
      "retry-index-after-compaction",
    ]) {
      assert.ok((seen.get(what) ?? 0) >= 3, `${what} was reached ${seen.get(what) ?? 0} times`);
    }
  });

  test("NDJSON: head = the concatenation of the stored parts (LF lines, BOM dropped, bare CR refused)", async () => {
    const ndjsonPart = fc.record({
      lines: fc.array(fc.nat(99), { maxLength: 3 }),
      ends: fc.constantFrom("\n", "\r\n"),
      last: fc.constantFrom("\n", "\r\n", "", "\r"),
      bom: fc.boolean(),
      bareCr: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(ndjsonPart, fc.nat(3)), { minLength: 1, maxLength: 8 }),
        async (steps) => {
          const registry = new SqliteJournalRegistry(":memory:");
          const store = new MemoryStore();
          let expected = "";
          try {
            for (const [p, maxParts] of steps) {
              const lines = p.lines.map((v) => `{"v":${v}}`);
              if (p.bareCr && lines.length > 0) lines[0] = `{"v":\r1}`;
              const raw =
                (p.bom ? BOM : "") +
                lines.map((l, i) => l + (i === lines.length - 1 ? p.last : p.ends)).join("");
              const o = { registry, store, part: enc(raw), format: "ndjson" as const, maxParts };
              if (p.bareCr && lines.length > 0) {
                await assert.rejects(
                  publishPart(o),
                  (e: unknown) => e instanceof PartRefused && e.reason === "bare-cr",
                );
              } else {
                await publishPart(o);
                expected += lines.map((l) => `${l}\n`).join("");
              }
              assert.equal(await headOf(registry, store), expected);
            }
          } finally {
            registry.close();
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});

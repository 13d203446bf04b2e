import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemoryStore } from "@zarr-stream/store";
import {
  composeHeadToStream,
  composeJournal,
  composeJournalAsync,
  type JournalRegistry,
  MAX_HEADER_BYTES,
  PartRefused,
  type PartRule,
  parseCsvHeaderLine,
  publishPart,
  SqliteJournalRegistry,
  storedPart,
} from "../src/index.js";
import { clock, enc, text } from "./helpers.js";

const BOM = "\uFEFF";

async function head(registry: JournalRegistry, store: MemoryStore): Promise<string> {
  const blocks: Uint8Array[] = [];
  await composeHeadToStream(registry, store, (b) => void blocks.push(b));
  return text(Buffer.concat(blocks));
}

function refusedFor(rule: PartRule) {
  return (e: unknown) => e instanceof PartRefused && e.reason === rule;
}

/** Both composers, the streaming one fed a byte at a time. */
async function composeBoth(parts: string[]): Promise<string> {
  const whole = text(composeJournal(parts.map(enc), "csv"));
  const bytewise = parts.map(
    (p) =>
      async function* () {
        for (const b of enc(p)) yield Uint8Array.of(b);
      },
  );
  assert.equal(text(await composeJournalAsync(bytewise, { format: "csv" })), whole);
  return whole;
}

describe("stored form: what publishPart normalises", () => {
  test("CSV: LF lines become CRLF, the last line gets its terminator, a final lone CR is one", () => {
    const cases: [string, string][] = [
      ["a,b\n1,2\n3,4", "a,b\r\n1,2\r\n3,4\r\n"],
      ["a,b\r\n1,2\n3,4\r\n", "a,b\r\n1,2\r\n3,4\r\n"],
      ["a,b\r\n1,2\r", "a,b\r\n1,2\r\n"],
      ["a,b", "a,b\r\n"],
      ["a,b\r", "a,b\r\n"],
      ["", ""],
      ["\r\n", "\r\n"],
    ];
    for (const [input, stored] of cases) {
      assert.equal(text(storedPart(enc(input), "csv", "p").bytes), stored, JSON.stringify(input));
    }
  });

  test("a part already in stored form is kept as it is, without a copy", () => {
    const csv = enc("a,b\r\n1,2\r\n");
    assert.equal(storedPart(csv, "csv", "p").bytes, csv);
    const ndjson = enc('{"a":1}\n');
    assert.equal(storedPart(ndjson, "ndjson", "p").bytes, ndjson);
  });

  test("leading BOMs are dropped (CSV and NDJSON); a BOM elsewhere is data", () => {
    assert.equal(text(storedPart(enc(`${BOM}a,b\r\n1,2\r\n`), "csv", "p").bytes), "a,b\r\n1,2\r\n");
    assert.deepEqual(storedPart(enc(`${BOM}${BOM}a,b\r\n`), "csv", "p").header, ["a", "b"]);
    assert.equal(text(storedPart(enc(`a,b\r\n${BOM}1,2\r\n`), "csv", "p").bytes), `a,b\r\n${BOM}1,2\r\n`);
    assert.equal(text(storedPart(enc(`${BOM}{"a":1}`), "ndjson", "p").bytes), '{"a":1}\n');
    assert.equal(text(storedPart(enc(BOM), "ndjson", "p").bytes), "");
  });

  test("NDJSON: CRLF becomes LF and the last line gets its terminator", () => {
    assert.equal(text(storedPart(enc('{"a":1}\r\n{"a":2}'), "ndjson", "p").bytes), '{"a":1}\n{"a":2}\n');
    assert.equal(text(storedPart(enc('{"a":1}\r'), "ndjson", "p").bytes), '{"a":1}\n');
  });
});

describe("refusals, each named by its rule, before anything is uploaded", () => {
  const refusals: [string, string, PartRule][] = [
    ["rows under an empty header line", "\r\n3,4\r\n", "empty-header"],
    ["a quoted cell spanning lines", 'a,b\r\n"x,\r\ny",2\r\n', "line-break-in-cell"],
    ["an unclosed quote at the end", 'a,b\r\n"x,2', "line-break-in-cell"],
    ["a quoted header cell spanning lines", 'a,"b\r\nc"\r\n1,2\r\n', "line-break-in-cell"],
    ["a bare CR in a cell", "a,b\r\n1\r2,3\r\n", "bare-cr"],
    ["a bare CR in the header", "a\rb,c\r\n1,2\r\n", "bare-cr"],
    ["a row wider than its header", "a,b\r\n1,2,3\r\n", "row-width"],
    ["a row narrower than its header", "a,b\r\n1\r\n", "row-width"],
    ["a blank data line", "a,b\r\n1,2\r\n\r\n3,4\r\n", "row-width"],
  ];
  for (const [what, part, rule] of refusals) {
    test(`${what}: ${rule}`, async () => {
      assert.throws(() => storedPart(enc(part), "csv", "p"), refusedFor(rule));
      const registry = new SqliteJournalRegistry(":memory:");
      const store = new MemoryStore();
      await publishPart({ registry, store, part: enc("a,b\r\n0,0\r\n"), format: "csv" });
      await assert.rejects(publishPart({ registry, store, part: enc(part) }), refusedFor(rule));
      assert.deepEqual(await store.list(""), ["journal/journal-p000000.csv"]);
      assert.equal((await registry.rows()).length, 1);
      assert.equal(await head(registry, store), "a,b\r\n0,0\r\n");
    });
  }

  test("a header line that is not UTF-8: header-encoding", () => {
    const part = Buffer.concat([enc("a,"), Buffer.from([0xff, 0xfe]), enc("\r\n1,2\r\n")]);
    assert.throws(() => storedPart(part, "csv", "p"), refusedFor("header-encoding"));
  });

  test("an NDJSON line with a bare CR: bare-cr", () => {
    assert.throws(() => storedPart(enc('{"a":1}\r{"a":2}\n'), "ndjson", "p"), refusedFor("bare-cr"));
  });

  test("a header longer than 1 MiB (150k columns): header-too-long, and the journal still composes", async () => {
    const wide = Array.from({ length: 150_000 }, (_, i) => `c${i}`).join(",");
    assert.ok(wide.length > MAX_HEADER_BYTES);
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const now = clock();
    await publishPart({ registry, store, now, part: enc("c0\r\n1\r\n"), format: "csv", maxParts: 2 });
    await assert.rejects(
      publishPart({ registry, store, now, part: enc(`${wide}\r\n${"1,".repeat(149_999)}1\r\n`) }),
      refusedFor("header-too-long"),
    );
    // A header just within the cap is stored, composes, and a compaction under it composes too.
    const fits = ["c0", ...Array.from({ length: 10 }, (_, i) => `x${"y".repeat(100_000)}${i}`)];
    const fitsLine = fits.join(",");
    assert.ok(fitsLine.length <= MAX_HEADER_BYTES);
    await publishPart({ registry, store, now, part: enc(`${fitsLine}\r\n${"2,".repeat(10)}2\r\n`) });
    await publishPart({ registry, store, now, part: enc("c0\r\n3\r\n") });
    const current = (await registry.current())!.config;
    assert.equal(current.journalCompactionCount, 1);
    const lines = (await head(registry, store)).split("\r\n");
    assert.deepEqual(lines.slice(1), ["1,,,,,,,,,,", "2,2,2,2,2,2,2,2,2,2,2", "3,,,,,,,,,,", ""]);
  });

  test("a header within the cap whose merged (quoted) form is past it: header-too-long", async () => {
    // `q"1` is a cell as it stands in a part and `"q""1"` in the composite's header line.
    const cells = Array.from({ length: 110_000 }, (_, i) => `q"${i}`);
    const line = cells.join(",");
    assert.ok(line.length <= MAX_HEADER_BYTES);
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    await assert.rejects(
      publishPart({ registry, store, part: enc(`${line}\r\n`), format: "csv" }),
      (e: unknown) => refusedFor("header-too-long")(e) && /merged header/.test((e as Error).message),
    );
    assert.deepEqual(await store.list(""), []);
  });
});

describe("hostile parts end to end: a BOM, a stray quote, a multi-line cell, rows under an empty header", () => {
  test("a BOM in the first part is not part of the first column; wider parts are accepted", async () => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const r0 = await publishPart({ registry, store, part: enc(`${BOM}t,x\r\n0,1\r\n`), format: "csv" });
    assert.deepEqual(r0.row.config.csvHeaders, ["t", "x"]);
    await publishPart({ registry, store, part: enc("t,x,y\r\n1,2,3\r\n") });
    assert.equal(await head(registry, store), "t,x,y\r\n0,1,\r\n1,2,3\r\n");
    // Readers drop a leading BOM of a part stored before the rule, by the same rule.
    assert.equal(
      await composeBoth([`${BOM}t,x\r\n0,1\r\n`, "t,x,y\r\n1,2,3\r\n"]),
      "t,x,y\r\n0,1,\r\n1,2,3\r\n",
    );
  });

  test('`a,b"c,d` is three cells for the header, the rows and both composers', async () => {
    assert.deepEqual(parseCsvHeaderLine('a,b"c,d'), ["a", 'b"c', "d"]);
    assert.deepEqual(storedPart(enc('a,b"c,d\r\n1,2"x,3\r\n'), "csv", "p").header, ["a", 'b"c', "d"]);
    assert.equal(
      await composeBoth(['a,b"c,d\r\n1,2"x,3\r\n', 'a,b"c,d,e\r\n4,5,6,7\r\n']),
      'a,"b""c",d,e\r\n1,2"x,3,\r\n4,5,6,7\r\n',
    );
  });

  test("both composers refuse a quoted multi-line cell instead of padding inside it", async () => {
    const parts = ["a,b,c\r\n1,2,3\r\n", 'a,b\r\n"x,\r\ny",2\r\n'];
    assert.throws(() => composeJournal(parts.map(enc), "csv"), refusedFor("line-break-in-cell"));
    await assert.rejects(composeBoth(parts), refusedFor("line-break-in-cell"));
  });

  test("an empty header line with rows: refused by publishPart and by both composers alike", async () => {
    await assert.rejects(composeBoth(["\r\n3,4\r\n"]), refusedFor("empty-header"));
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    await assert.rejects(
      publishPart({ registry, store, part: enc("\r\n3,4\r\n"), format: "csv" }),
      refusedFor("empty-header"),
    );
    assert.deepEqual(await store.list(""), []);
    // An empty part is a run that decoded nothing: accepted, and the composite stays empty.
    await publishPart({ registry, store, part: enc(""), format: "csv" });
    assert.equal(await head(registry, store), "");
  });
});

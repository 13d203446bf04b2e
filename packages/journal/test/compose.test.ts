import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { StoreError } from "@zarr-stream/spec";
import { FsStore, MemoryStore } from "@zarr-stream/store";
import {
  composeJournal,
  composeJournalAsync,
  composeJournalToStream,
  filePartSource,
  JournalError,
  PartRefused,
  storePartSource,
} from "../src/index.js";
import { enc, tempDir, text } from "./helpers.js";

/** Every golden case also goes through the streaming composer, fed one byte at a time. */
async function composeBoth(
  parts: string[],
  format: "csv" | "ndjson",
  csvHeaders?: string[],
): Promise<string> {
  const whole = text(composeJournal(parts.map(enc), format, csvHeaders ? { csvHeaders } : {}));
  const bytewise = parts.map(
    (p) =>
      async function* () {
        for (const b of enc(p)) yield Uint8Array.of(b);
      },
  );
  const streamed = text(
    await composeJournalAsync(bytewise, { format, ...(csvHeaders ? { csvHeaders } : {}) }),
  );
  assert.equal(streamed, whole, "streaming and in-memory composers disagree");
  const lent: Uint8Array[] = [];
  const sink = (chunk: Uint8Array) => void lent.push(Buffer.from(chunk));
  await composeJournalToStream(bytewise, sink, {
    format,
    reuseBuffers: true,
    ...(csvHeaders ? { csvHeaders } : {}),
  });
  assert.equal(text(Buffer.concat(lent)), whole, "lent-buffer composition differs");
  return whole;
}

describe("seed 004 composer golden bytes", () => {
  test("invariant 1/5: union header line, then each part's rows after its own header", async () => {
    const out = await composeBoth(["a,b\r\n1,2\r\n", "a,b,c\r\n3,4,5\r\n"], "csv");
    assert.equal(out, "a,b,c\r\n1,2,\r\n3,4,5\r\n");
  });

  test("invariant 3: each line padded with ',' x (union - part width) before its terminator", async () => {
    const out = await composeBoth(["x\r\n1\r\n2\r\n", "x,y\r\n3,4\r\n", "x,y,z,w\r\n5,6,7,8\r\n"], "csv");
    assert.equal(out, "x,y,z,w\r\n1,,,\r\n2,,,\r\n3,4,,\r\n5,6,7,8\r\n");
  });

  test("invariant 2: a missing final terminator is added (CSV and NDJSON)", async () => {
    assert.equal(await composeBoth(["a,b\r\n1,2", "a,b\r\n3,4"], "csv"), "a,b\r\n1,2\r\n3,4\r\n");
    assert.equal(
      await composeBoth(['{"a":1}', '{"b":2}\n', '{"c":3}'], "ndjson"),
      '{"a":1}\n{"b":2}\n{"c":3}\n',
    );
  });

  test("invariant 4: CSV lines end CRLF even when a part used LF; NDJSON keeps LF", async () => {
    assert.equal(await composeBoth(["a\n1\n2\n", "a,b\n3,4\n"], "csv"), "a,b\r\n1,\r\n2,\r\n3,4\r\n");
    assert.equal(await composeBoth(['{"a":1}\n{"a":2}\n'], "ndjson"), '{"a":1}\n{"a":2}\n');
  });

  test("invariant 5: empty csvHeaders give an empty composite with no header line", async () => {
    assert.equal(await composeBoth([""], "csv"), "");
    assert.equal(await composeBoth(["", ""], "csv", []), "");
    assert.equal(await composeBoth([], "csv"), "");
  });

  test("invariant 5: a first empty part contributes nothing to a later non-empty journal", async () => {
    assert.equal(await composeBoth(["", "a,b\r\n1,2\r\n"], "csv"), "a,b\r\n1,2\r\n");
  });

  test("invariant 5: NDJSON composite is the concatenation", async () => {
    assert.equal(
      await composeBoth(['{"a":1}\n', "", '{"a":2}\n{"a":3}\n'], "ndjson"),
      '{"a":1}\n{"a":2}\n{"a":3}\n',
    );
  });

  test("invariant 7: width comes from the part's own first line; a quoted comma is one cell", async () => {
    // Part 1's header "a","b,c" has width 2 (not 3), so its rows get one pad comma under a 3-wide union.
    const out = await composeBoth(['a,"b,c"\r\n1,"x,y"\r\n', 'a,"b,c",d\r\n2,z,3\r\n'], "csv");
    assert.equal(out, 'a,"b,c",d\r\n1,"x,y",\r\n2,z,3\r\n');
  });

  test("invariant 7: the head's csvHeaders widen the union even when no part header is that wide", async () => {
    const out = await composeBoth(["a\r\n1\r\n"], "csv", ["a", "b", "c"]);
    assert.equal(out, "a,b,c\r\n1,,\r\n");
  });

  test("invariant 1: a part header that is not a prefix of the union is refused", async () => {
    assert.throws(
      () => composeJournal([enc("a,b\r\n1,2\r\n"), enc("a,c\r\n3,4\r\n")], "csv"),
      (e: unknown) => {
        return e instanceof JournalError && e.reason === "header-prefix" && /part 1/.test(e.message);
      },
    );
    await assert.rejects(
      composeJournalAsync([enc("b\r\n1\r\n")], { format: "csv", csvHeaders: ["a", "b"] }),
      (e: unknown) => e instanceof JournalError && e.reason === "header-prefix",
    );
  });

  test("a part with rows under an empty header line is refused", () => {
    assert.throws(
      () => composeJournal([enc("\r\n1,2\r\n")], "csv"),
      (e: unknown) => e instanceof JournalError && /part 0/.test(e.message),
    );
  });

  test("a header-only part adds no rows; a CR split from its LF across chunks is one terminator", async () => {
    assert.equal(await composeBoth(["a,b\r\n", "a,b\r\n1,2\r\n"], "csv"), "a,b\r\n1,2\r\n");
    assert.equal(await composeBoth(["a,b\r\n1,2\r"], "csv"), "a,b\r\n1,2\r\n");
  });

  test("an unknown format is refused before reading any part", async () => {
    let opened = false;
    const source = async function* () {
      opened = true;
      yield enc("x");
    };
    await assert.rejects(
      composeJournalToStream([source], () => {}, { format: "tsv" as "csv" }),
      (e: unknown) => e instanceof JournalError && e.reason === "format",
    );
    assert.equal(opened, false);
  });
});

describe("streaming composer over many output blocks", () => {
  test("lent and fresh output blocks give the same bytes as the in-memory composer", async () => {
    const row = (p: number, i: number, w: number) =>
      Array.from({ length: w }, (_, c) => `${p}-${i}-${c}`).join(",");
    const parts = [1, 3, 2].map((w, p) => {
      const header = ["h0", "h1", "h2"].slice(0, Math.max(w, p === 2 ? 3 : w)).join(",");
      const lines = Array.from({ length: 20000 }, (_, i) => row(p, i, header.split(",").length));
      return enc(`${header}\n${lines.join(p === 1 ? "\r\n" : "\n")}`);
    });
    const expected = Buffer.from(composeJournal(parts, "csv"));
    assert.ok(expected.length > 4 * 65536, "composite should span several output blocks");
    const sources = parts.map(
      (p) =>
        async function* () {
          for (let i = 0; i < p.length; i += 7919) yield p.subarray(i, i + 7919);
        },
    );
    const lent: Uint8Array[] = [];
    await composeJournalToStream(sources, (c) => void lent.push(Buffer.from(c)), {
      format: "csv",
      reuseBuffers: true,
    });
    assert.ok(Buffer.concat(lent).equals(expected));
    assert.ok(Buffer.from(await composeJournalAsync(sources, { format: "csv" })).equals(expected));
    assert.ok(expected.subarray(0, 12).toString() === "h0,h1,h2\r\n0-");
  });
});

describe("part sources", () => {
  test("file and store sources compose like in-memory parts; a missing or short blob is a StoreError", async (t) => {
    const dir = tempDir(t, "sources");
    const parts = ["a\r\n1\r\n", "a,b\n2,3"];
    const files = parts.map((p, i) => {
      const f = join(dir, `p${i}.csv`);
      writeFileSync(f, p);
      return f;
    });
    const expected = "a,b\r\n1,\r\n2,3\r\n";
    assert.equal(text(await composeJournalAsync(files.map(filePartSource), { format: "csv" })), expected);
    const store = new MemoryStore();
    await store.put("p0.csv", enc(parts[0]!));
    await store.put("p1.csv", enc(parts[1]!));
    const fromStore = ["p0.csv", "p1.csv"].map((k) => storePartSource(store, k, 3));
    assert.equal(text(await composeJournalAsync(fromStore, { format: "csv" })), expected);
    // Lent reads: one 3-byte buffer per part, refilled by each range (FsStore reads into it).
    const disk = new FsStore(join(dir, "store"));
    await disk.put("p0.csv", enc(parts[0]!));
    await disk.put("p1.csv", enc(parts[1]!));
    const lent = ["p0.csv", "p1.csv"].map((k) => storePartSource(disk, k, 3, { lend: true }));
    assert.equal(text(await composeJournalAsync(lent, { format: "csv" })), expected);
    await assert.rejects(
      composeJournalAsync([storePartSource(store, "absent.csv")], { format: "csv" }),
      (e: unknown) => e instanceof StoreError && e.key === "absent.csv",
    );
    /** A blob that reads shorter than its listed size, as when it is replaced mid-read. */
    class ShortReads extends MemoryStore {
      override async getRange(): Promise<Uint8Array> {
        return enc("a");
      }
    }
    const shrinking = new ShortReads();
    await shrinking.put("p0.csv", enc(parts[0]!));
    await assert.rejects(
      composeJournalAsync([storePartSource(shrinking, "p0.csv")], { format: "csv" }),
      (e: unknown) => e instanceof StoreError && /expected/.test(e.message),
    );
  });
});

describe("sources that lend one buffer", () => {
  test("a buffer refilled between chunks is read afresh (a quoted cell in the second filling is seen)", async () => {
    const size = 512 * 1024;
    /** `size` bytes of 2-cell CRLF lines ending in `tail`: enough lines that each feed stops early. */
    const filling = (tail: string) => {
      const lines = "1,2\r\n".repeat(Math.floor(size / 5) - 4);
      return `${lines}3,${"4".repeat(size - lines.length - tail.length - 4)}\r\n${tail}`;
    };
    const first = filling("5,6\r\n");
    const second = filling('"x,\r\ny",2\r\n');
    assert.equal(first.length, size);
    assert.equal(second.length, size);
    const buffer = Buffer.alloc(size);
    const source = async function* () {
      yield enc("a,b\r\n");
      yield buffer.fill(first);
      yield buffer.fill(second);
    };
    await assert.rejects(
      composeJournalAsync([source], { format: "csv" }),
      (e: unknown) => e instanceof PartRefused && e.reason === "line-break-in-cell",
    );
    assert.throws(
      () => composeJournal([enc(`a,b\r\n${first}${second}`)], "csv"),
      (e: unknown) => e instanceof PartRefused && e.reason === "line-break-in-cell",
    );
  });
});

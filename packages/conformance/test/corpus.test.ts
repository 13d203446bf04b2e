import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  type ConformanceCase,
  type ConformanceCorpus,
  type ConformanceDump,
  conformanceCorpusJsonSchema,
  conformanceDumpJsonSchema,
  SchemaError,
} from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import {
  BUNDLED_CORPUS,
  ConformanceFailure,
  compareDump,
  dumpStore,
  findCase,
  loadCorpus,
  oracleDump,
  parseCorpus,
  runCase,
  runConformanceCli,
} from "../src/index.js";

const corpus = await loadCorpus(BUNDLED_CORPUS);

/** Every case once, on a MemoryStore: the stores and dumps feed several tests below. */
const dumps = new Map<string, ConformanceDump>();
const stores = new Map<string, MemoryStore>();
async function storeOf(c: ConformanceCase): Promise<MemoryStore> {
  let store = stores.get(c.name);
  if (!store) {
    store = new MemoryStore();
    await runCase(c, store);
    stores.set(c.name, store);
  }
  return store;
}
async function dumpOf(c: ConformanceCase): Promise<ConformanceDump> {
  let d = dumps.get(c.name);
  if (!d) {
    d = await dumpStore(await storeOf(c), c.name);
    dumps.set(c.name, d);
  }
  return d;
}

const REQUIRED = [
  "region-tiling",
  "region-misaligned",
  "region-gap",
  "region-overlap",
  "indexed-reverse",
  "partial-shard-resume",
  "truncate-on-resume",
  "dtypes",
  "statics-and-blobs",
  "manifest-v1-compat",
  "partly-partitioned",
  "time-not-first",
  "invalidate-rewrite",
  "ragged-last-shard",
  "contributor-replicated",
  "contributor-close-unflushed",
];

describe("§10 corpus", () => {
  test("§10 the bundled corpus has every required case and passes its JSON Schema", () => {
    assert.equal(corpus.schema, "earthsciio/write-conformance-spec/v2");
    const names = corpus.cases.map((c) => c.name);
    for (const name of REQUIRED) assert.ok(names.includes(name), `missing case ${name}`);
    const errorKinds = new Set(corpus.cases.flatMap((c) => c.ops.map((o) => o.expect_error).filter(Boolean)));
    assert.deepEqual([...errorKinds].sort(), ["CommitError", "Error", "RegionNotShardAligned"]);
  });

  for (const c of corpus.cases) {
    test(`§10 ${c.name}: the committed store equals the oracle bitwise`, async () => {
      const mismatches = compareDump(oracleDump(c), await dumpOf(c));
      assert.deepEqual(mismatches, []);
    });
  }

  test("§10 region-tiling: 2×2 region writers decode bitwise equal to one writer", async () => {
    const tiled = await dumpOf(findCase(corpus, "region-tiling"));
    const single = await dumpOf(findCase(corpus, "region-tiling-single"));
    assert.equal(tiled.records.length, 4);
    assert.deepEqual(tiled.records, single.records);
    assert.equal(tiled.manifest_schema, "earthsciio/output-manifest/v2");
    assert.equal(single.manifest_schema, "earthsciio/output-manifest/v1");
  });

  test("§10 indexed-reverse: descending write_record_at equals forward append", async () => {
    const reverse = await dumpOf(findCase(corpus, "indexed-reverse"));
    const forward = await dumpOf(findCase(corpus, "indexed-forward-append"));
    const strip = (d: ConformanceDump) => d.records.map(({ generation: _g, ...r }) => r);
    assert.equal(reverse.records.length, 5);
    assert.deepEqual(strip(reverse), strip(forward));
  });
});

describe("§10 past 512 manifest entries, paged and not", () => {
  const manifestOf = async (name: string) => {
    const store = await storeOf(findCase(corpus, name));
    return JSON.parse(new TextDecoder().decode(await store.get("output_manifest.json")));
  };
  const data = (d: ConformanceDump) => ({ records: d.records, statics: d.statics, blobs: d.blobs });

  test("§10 append, 524 time shards: one sealed page and a tail of 12, or all 524 inline; the same data", async () => {
    const paged = await manifestOf("pages-append-524");
    assert.equal(paged.schema, "zarr-stream/output-manifest/v2-paged");
    assert.deepEqual(
      paged.time_shard_pages.map((p: { first: number; count: number }) => [p.first, p.count]),
      [[0, 512]],
    );
    assert.equal(paged.time_shards.length, 12);
    const inline = await manifestOf("unpaged-append-524");
    assert.equal(inline.schema, "earthsciio/output-manifest/v2");
    assert.equal(inline.time_shard_pages, undefined);
    assert.equal(inline.time_shards.length, 524);
    assert.deepEqual(
      data(await dumpOf(findCase(corpus, "pages-append-524"))),
      data(await dumpOf(findCase(corpus, "unpaged-append-524"))),
    );
  });

  test("§10 indexed, 600 entries: two record pages and nothing inline, or all 600 inline; the same data", async () => {
    const paged = await manifestOf("pages-indexed-600");
    assert.equal(paged.schema, "zarr-stream/output-manifest/v2-paged");
    assert.deepEqual(
      paged.records.pages.map((p: { first: number; count: number }) => [p.first, p.count]),
      [
        [0, 512],
        [512, 88],
      ],
    );
    assert.deepEqual(paged.records.entries, []);
    const inline = await manifestOf("unpaged-indexed-600");
    assert.equal(inline.schema, "earthsciio/output-manifest/v2");
    assert.equal(inline.records.entries.length, 600);
    assert.deepEqual(
      data(await dumpOf(findCase(corpus, "pages-indexed-600"))),
      data(await dumpOf(findCase(corpus, "unpaged-indexed-600"))),
    );
  });
});

describe("§10 every error kind", () => {
  // The kinds the corpus defines, read from its JSON Schema so that a kind added there needs a case here.
  const kinds: readonly string[] =
    conformanceCorpusJsonSchema.properties.cases.items.properties.ops.items.properties.expect_error.enum;
  const opsOf = (kind: string, cases = corpus.cases) =>
    cases.flatMap((c) => c.ops.flatMap((o, i) => (o.expect_error === kind ? [{ c, i }] : [])));
  const pagedCases = corpus.cases.filter((c) =>
    c.ops.some((o) => o.op === "create" && o.manifest_pages === true),
  );

  for (const kind of kinds) {
    test(`§10 ${kind}: a case refuses it, in the seed's form and in the paged form, and the refusal is the writer's`, async () => {
      assert.ok(
        opsOf(kind).some(({ c }) => !pagedCases.includes(c)),
        `no unpaged case expects ${kind}`,
      );
      const paged = opsOf(kind, pagedCases);
      assert.ok(paged.length > 0, `no paged case expects ${kind}`);
      // The op made plain must then fail the case with the writer's own error of that kind: the
      // refusal comes from the writer, not from the driver.
      const { c, i } = paged[0]!;
      const plain = withCase(c, (x) => {
        delete x.ops[i]!.expect_error;
      });
      await assert.rejects(runCase(plain, new MemoryStore()), (err: unknown) => {
        assert.ok(err instanceof ConformanceFailure);
        assert.equal(err.op, i);
        const name = /failed: (\w+): /.exec(err.message)?.[1];
        // "Error" is any error of the contract (the writer refuses a t that does not increase with a
        // SchemaError, for one); the driver's own corpus errors name no writer op that ran.
        if (kind === "Error")
          assert.ok(name !== undefined && !/no open writer|no token named/.test(err.message));
        else assert.equal(name, kind, err.message);
        return true;
      });
    });
  }
});

function withCase(c: ConformanceCase, patch: (c: ConformanceCase) => void): ConformanceCase {
  const copy = structuredClone(c);
  patch(copy);
  return copy;
}

describe("§10 oracle and check", () => {
  test("§10 check names the record and variable whose generator record differs", async () => {
    const c = findCase(corpus, "region-tiling");
    const wrong = withCase(c, (x) => {
      x.expect.records[2]!.r = 12;
    });
    const mismatches = compareDump(oracleDump(wrong), await dumpOf(c));
    assert.ok(mismatches.length > 0);
    // Written: 1000 + 13*2 + (0+1)*3 + (0+1)*5 + 0.25; generator record 12 would give 1164.25.
    assert.match(
      mismatches[0]!,
      /^record 2 var temperature: element \[0,0\] is 1034\.25, expected 1164\.25 \(bitwise\)$/,
    );
    assert.ok(mismatches.every((m) => m.startsWith("record 2 ")));
  });

  test("§10 check compares t bitwise, commit_seq, statics and blob bytes", async () => {
    const c = findCase(corpus, "statics-and-blobs");
    const dump = structuredClone(await dumpOf(c));
    dump.records[1]!.t = 3600.0000000000005;
    dump.commit_seq = 7;
    delete dump.statics.mask;
    dump.blobs[0]!.hex = "00";
    const m = compareDump(oracleDump(c), dump);
    assert.ok(m.includes("commit_seq 7, expected 2"), m.join("\n"));
    assert.ok(m.some((x) => x.startsWith("record 1: t 3600.0000000000005, expected 3600")));
    assert.ok(m.includes("static mask: not committed"));
    assert.ok(
      m.some((x) => /^blob record 0\/writer 0\/state: bytes 00, expected abcd$/.test(x)),
      m.join("\n"),
    );
  });

  test("§10 a reader error is reported against its record and variable", async () => {
    const c = findCase(corpus, "dtypes");
    const dump = structuredClone(await dumpOf(c));
    dump.records[3]!.vars.i64 = { error: "CorruptShard: bad crc" };
    assert.deepEqual(compareDump(oracleDump(c), dump), [
      "record 3 var i64: reader error: CorruptShard: bad crc",
    ]);
  });

  test("§10 the oracle comes from the generator formula, not from a writer", () => {
    const c = findCase(corpus, "dtypes");
    const o = oracleDump(c);
    const u8 = Buffer.from((o.records[1]!.vars.u8 as { data_b64: string }).data_b64, "base64");
    // seed 240 + 13*1 + (0+1)*3 + (0+1)*5 = 261 -> 261 mod 251 = 10
    assert.equal(u8[0], 10);
    const i64 = Buffer.from((o.records[0]!.vars.i64 as { data_b64: string }).data_b64, "base64");
    assert.equal(i64.readBigInt64LE(0), 1099511627776n + 8n);
  });
});

describe("§10 driver", () => {
  const base = findCase(corpus, "contributor-close-unflushed");

  test("§10 an op marked expect_error that succeeds fails the case, naming case and op", async () => {
    const c = withCase(base, (x) => {
      x.ops[1] = { ...x.ops[1]!, expect_error: "Error" } as ConformanceCase["ops"][number];
    });
    await assert.rejects(runCase(c, new MemoryStore()), (err: unknown) => {
      assert.ok(err instanceof ConformanceFailure);
      assert.equal(err.op, 1);
      assert.match(
        err.message,
        /^case contributor-close-unflushed: op 1 \(join w1\) succeeded, expected Error$/,
      );
      return true;
    });
  });

  test("§10 the wrong error kind fails the case", async () => {
    const c = withCase(base, (x) => {
      const i = x.ops.findIndex((o) => o.expect_error === "Error");
      x.ops[i] = { ...x.ops[i]!, expect_error: "CommitError" } as ConformanceCase["ops"][number];
    });
    await assert.rejects(
      runCase(c, new MemoryStore()),
      /failed with ProtocolError: .*; expected CommitError/,
    );
  });

  test("§10 an op that fails unexpectedly fails the case with the writer's error", async () => {
    const c = withCase(findCase(corpus, "region-gap"), (x) => {
      const i = x.ops.findIndex((o) => o.expect_error === "CommitError");
      const { expect_error: _e, ...op } = x.ops[i]!;
      x.ops[i] = op as ConformanceCase["ops"][number];
    });
    await assert.rejects(runCase(c, new MemoryStore()), /op \d+ \(commit w0\) failed: CommitError: /);
  });

  test("§10 a token name never flushed is a SchemaError inside the failure", async () => {
    const c = withCase(base, (x) => {
      x.ops.push({ op: "commit", writer: "w0", tokens: ["nope"] });
    });
    await assert.rejects(runCase(c, new MemoryStore()), /no token named "nope"/);
  });
});

describe("§10 corpus schema", () => {
  test("§10 the JSON Schema files shipped beside the corpus are the ones in @zarr-stream/spec", async () => {
    const dir = new URL("../../corpus/", import.meta.url);
    const read = async (f: string) => JSON.parse(await readFile(new URL(f, dir), "utf8"));
    assert.deepEqual(await read("write_spec_v2.schema.json"), conformanceCorpusJsonSchema);
    assert.deepEqual(await read("write_v2_dump.schema.json"), conformanceDumpJsonSchema);
  });

  const doc = (): ConformanceCorpus => structuredClone(corpus);

  test("§10 an unknown op field is refused with its JSON pointer", () => {
    const d = doc() as unknown as { cases: { ops: Record<string, unknown>[] }[] };
    d.cases[0]!.ops[0]!.colour = "red";
    assert.throws(
      () => parseCorpus(d),
      (err: unknown) => err instanceof SchemaError && err.pointer === "/cases/0/ops/0",
    );
  });

  test("§10 expect.records without t (the seed's wording) take t from the write_record ops", async () => {
    const d = doc();
    for (const c of d.cases) for (const r of c.expect.records) delete r.t;
    const letter = parseCorpus(d);
    for (const c of letter.cases) {
      const original = findCase(corpus, c.name);
      assert.deepEqual(oracleDump(c), oracleDump(original), c.name);
      assert.deepEqual(compareDump(oracleDump(c), await dumpOf(original)), [], c.name);
    }
  });

  test("§10 the corpus written to the seed's letter runs and checks through the command line", async () => {
    const dir = await mkdtemp(join(tmpdir(), "zs-letter-"));
    try {
      const d = doc();
      // A case that gives no t is in the seed's letter already and runs as it is above (the cases
      // past 512 entries, a thousand ops each, among them).
      d.cases = d.cases.filter((c) => c.expect.records.some((r) => r.t !== undefined));
      assert.ok(d.cases.length >= 16);
      for (const c of d.cases) for (const r of c.expect.records) delete r.t;
      const file = join(dir, "letter.json");
      await writeFile(file, JSON.stringify(d));
      const lines: string[] = [];
      const io = { stdout: (l: string) => lines.push(l), stderr: (l: string) => lines.push(l) };
      assert.equal(
        await runConformanceCli(["write", "--corpus", file, "--out", dir], io),
        0,
        lines.join("\n"),
      );
      const files = d.cases.map((c) => join(dir, c.name, "dump.json"));
      lines.length = 0;
      assert.equal(await runConformanceCli(["check", "--corpus", file, ...files], io), 0, lines.join("\n"));
      assert.equal(lines.filter((l) => l.startsWith("ok ")).length, d.cases.length);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("§10 an append record without t whose r the ops write at two t values is refused", () => {
    const d = doc();
    const i = d.cases.findIndex((c) => c.name === "truncate-on-resume");
    const c = d.cases[i]!;
    // Make the refused write succeed: r 7 is then written at 3600 and at 5000.
    const op = c.ops.findIndex((o) => o.expect_error !== undefined);
    delete c.ops[op]!.expect_error;
    for (const r of c.expect.records) delete r.t;
    assert.throws(
      () => parseCorpus(d),
      (err: unknown) =>
        err instanceof SchemaError &&
        /\/cases\/truncate-on-resume\/expect\/records\/2: write_record ops write generator record 7 at t 3600, 5000: give t/.test(
          err.message,
        ),
    );
  });

  test("§10 an append record whose r no op writes must give t; a given t must match the ops", () => {
    const d = doc();
    d.cases[0]!.expect.records[0]!.r = 99;
    delete d.cases[0]!.expect.records[0]!.t;
    assert.throws(() => parseCorpus(d), /records\/0: no write_record op writes generator record 99/);
    d.cases[0]!.expect.records[0]!.t = 0;
    assert.doesNotThrow(() => parseCorpus(d));
    const e = doc();
    e.cases[0]!.expect.records[1]!.t = 3601;
    assert.throws(() => parseCorpus(e), /records\/1\/t: t 3601 is not a t that write_record ops write/);
  });

  test("§10 duplicate case names and invalid stream schemas are refused", () => {
    const d = doc();
    d.cases.push(structuredClone(d.cases[0]!));
    assert.throws(() => parseCorpus(d), /duplicate case name/);
    const e = doc();
    e.cases[0]!.schema.shard_shape.lon = 4;
    assert.throws(() => parseCorpus(e), /\/cases\/region-tiling\/schema: .*not a multiple of chunk 3/);
  });

  test("§10 ops naming an unknown variable or static are refused with the op's pointer", () => {
    const d = doc();
    d.cases[0]!.ops.push({ op: "write_record", writer: "w0", t: 1, r: 0, vars: ["nope"] });
    assert.throws(() => parseCorpus(d), /\/cases\/region-tiling\/ops\/\d+\/vars: unknown variable nope/);
    const e = doc();
    e.cases[0]!.ops.push({ op: "write_static", writer: "w0", name: "area" });
    assert.throws(() => parseCorpus(e), /\/ops\/\d+\/name: unknown static area/);
  });

  test("§10 a role outside single/owner/contributor is refused", () => {
    const d = doc() as unknown as { cases: { ops: Record<string, unknown>[] }[] };
    d.cases[0]!.ops[0]!.role = { boss: 1 };
    assert.throws(() => parseCorpus(d), SchemaError);
  });
});

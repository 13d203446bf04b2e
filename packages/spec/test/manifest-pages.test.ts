import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  CorruptStore,
  canonicalJsonUtf8,
  IntegralFloat,
  indexedTimeShards,
  MANIFEST_INDEX_PAGE_SIZE,
  MANIFEST_PAGE_SIZE,
  type ManifestPageFetch,
  type ManifestPageRef,
  makeManifestPage,
  manifestPageBytes,
  manifestPageKey,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifestV2,
  pageManifest,
  type RecordEntry,
  resolveManifestPages,
  SchemaError,
  validateManifestPage,
  validateOutputManifest,
} from "../src/index.js";
import { manifestV2 } from "./examples.js";

const P = MANIFEST_PAGE_SIZE;

/**
 * An indexed manifest in the paged form of `n` records, of which `committed` holds; its time shards
 * summarise them.
 */
function indexedManifest(flags: boolean[], shardT: number): OutputManifestV2 {
  const entries: RecordEntry[] = flags.map((c, i) => ({ committed: c, t: i * 1.5, generation: c ? 1 : 0 }));
  const lastT = entries.filter((e) => e.committed).at(-1)?.t ?? null;
  return {
    ...manifestV2,
    schema: OUTPUT_MANIFEST_V2_PAGED,
    dims: manifestV2.dims.map((d) => (d.name === manifestV2.time_dim ? { ...d, length: flags.length } : d)),
    n_records: flags.length,
    shard_shape: { ...manifestV2.shard_shape, [manifestV2.time_dim]: shardT },
    time_shards: indexedTimeShards(entries, shardT),
    last_t: lastT,
    records: { entries },
    blobs: [],
  };
}

/** An append manifest in the paged form whose `n` time shards each hold `shardT` records. */
function appendManifest(nShards: number, shardT: number): OutputManifestV2 {
  const time_shards = Array.from({ length: nShards }, (_, index) => ({
    index,
    t_start: index * shardT,
    t_end: index * shardT + shardT - 1,
    n: shardT,
  }));
  const { records: _records, ...rest } = manifestV2;
  const n = nShards * shardT;
  return {
    ...rest,
    schema: OUTPUT_MANIFEST_V2_PAGED,
    time_mode: "append",
    dims: rest.dims.map((d) => (d.name === rest.time_dim ? { ...d, length: n } : d)),
    n_records: n,
    shard_shape: { ...rest.shard_shape, [rest.time_dim]: shardT },
    time_shards,
    last_t: n > 0 ? n - 1 : null,
    blobs: [],
  };
}

/** A page store: the pages written, and a fetch that checks each page as a reader must. */
function pageStore(pages: { ref: ManifestPageRef; bytes: Uint8Array }[]) {
  const objects = new Map(pages.map((p) => [p.ref.sha256, p.bytes]));
  const fetch: ManifestPageFetch = async (list, ref) => {
    const bytes = objects.get(ref.sha256);
    if (bytes === undefined) throw new CorruptStore(`${manifestPageKey(list, ref.sha256)} is missing`);
    return validateManifestPage(list, ref, bytes);
  };
  return { objects, fetch };
}

/** Stores the paged form as JSON text and reads it back, as a reader sees it. */
async function roundTrip(m: OutputManifestV2) {
  const { manifest, pages } = pageManifest(m);
  const { fetch } = pageStore(pages);
  const stored = validateOutputManifest(JSON.parse(JSON.stringify(manifest)));
  return { manifest, pages, resolved: await resolveManifestPages(stored, fetch) };
}

test("paging then resolving gives back the same lists, indexed, for any length and commit pattern", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.boolean(), { maxLength: 3 * P + 7 }),
      fc.integer({ min: 1, max: 4 }),
      async (flags, shardT) => {
        const m = indexedManifest(flags, shardT);
        const { manifest, pages, resolved } = await roundTrip(m);
        assert.deepEqual(resolved, m);
        assert.equal(pages.length, flags.length <= P ? 0 : Math.ceil(flags.length / P));
        if (flags.length > P) {
          assert.deepEqual(manifest.records!.entries, []);
          assert.deepEqual(manifest.time_shards, []);
        }
      },
    ),
    { numRuns: 60 },
  );
});

test("paging then resolving gives back the same time shards, append, for any length", async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: 4 * P + 3 }), async (nShards) => {
      const m = appendManifest(nShards, 2);
      const { manifest, pages, resolved } = await roundTrip(m);
      assert.deepEqual(resolved, m);
      assert.equal(pages.length, nShards <= P ? 0 : Math.floor(nShards / P));
      for (const p of pages) assert.equal(p.ref.count, P);
      assert.equal(manifest.time_shards.length, nShards <= P ? nShards : nShards % P);
    }),
    { numRuns: 40 },
  );
});

test("a list of at most P entries stays inline: the stored manifest is the manifest, key for key", () => {
  fc.assert(
    fc.property(fc.array(fc.boolean(), { maxLength: P }), (flags) => {
      const m = indexedManifest(flags, 1);
      const { manifest, pages } = pageManifest(m);
      assert.equal(pages.length, 0);
      assert.equal(JSON.stringify(manifest), JSON.stringify(m));
    }),
    { numRuns: 40 },
  );
});

test("an edit changes the key of only the page of its block; resolving the edited list gives it back", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: P + 1, max: 3 * P }),
      fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
      async (n, picks) => {
        const flags = Array.from({ length: n }, (_, i) => i % 3 === 0);
        const before = pageManifest(indexedManifest(flags, 1)).manifest.records!.pages!;
        const edited = flags.slice();
        const touched = new Set<number>();
        for (const p of picks) {
          const i = p % n;
          edited[i] = !edited[i];
          touched.add(Math.floor(i / P));
        }
        const m = indexedManifest(edited, 1);
        const { manifest, resolved } = await roundTrip(m);
        assert.deepEqual(resolved, m);
        manifest.records!.pages!.forEach((ref, b) => {
          const same = ref.sha256 === before[b]!.sha256;
          // Toggling the same record twice restores the page, so only an unchanged block must keep its key.
          if (!touched.has(b)) assert.ok(same, `block ${b} was not edited`);
        });
      },
    ),
    { numRuns: 30 },
  );
});

test("page bytes are canonicalJsonUtf8 of the entries with times as floats, for any times", () => {
  const time = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constant(-0));
  fc.assert(
    fc.property(
      fc.array(fc.record({ committed: fc.boolean(), t: time, generation: fc.nat() }), { minLength: 1 }),
      (entries) => {
        const marked = entries.map((e) => ({
          ...e,
          t: Number.isInteger(e.t) ? new IntegralFloat(e.t) : e.t,
        }));
        assert.equal(new TextDecoder().decode(manifestPageBytes(entries)), canonicalJsonUtf8(marked));
      },
    ),
    { numRuns: 300 },
  );
});

test("page bytes print times as Python floats, keys sorted, no whitespace", () => {
  const m = appendManifest(P + 1, 1);
  const { pages } = pageManifest(m);
  const text = new TextDecoder().decode(pages[0]!.bytes);
  assert.ok(text.startsWith('[{"index":0,"n":1,"t_end":0.0,"t_start":0.0},{"index":1,'), text.slice(0, 80));
});

test("a paged manifest that keeps entries inline beside its pages, or pages the other list, is refused", () => {
  const { manifest } = pageManifest(indexedManifest(Array(P + 1).fill(true), 1));
  const entry = { committed: true, t: 0, generation: 1 };
  const withTail = { ...manifest, records: { ...manifest.records!, entries: [entry] } };
  assert.throws(
    () => validateOutputManifest(withTail),
    (e) => e instanceof SchemaError && e.pointer === "/records/entries",
  );
  const withShards = { ...manifest, time_shard_pages: manifest.records!.pages };
  assert.throws(
    () => validateOutputManifest(withShards),
    (e) => e instanceof SchemaError && e.pointer === "/time_shard_pages",
  );
});

test("a page whose bytes do not hash to its ref is CorruptStore; a wrong count is a SchemaError", () => {
  const { pages } = pageManifest(appendManifest(P + 1, 1));
  const page = pages[0]!;
  const tampered = page.bytes.slice();
  tampered[tampered.length - 3] = "7".charCodeAt(0);
  assert.throws(() => validateManifestPage("time_shards", page.ref, tampered), CorruptStore);
  assert.throws(
    () => validateManifestPage("time_shards", { ...page.ref, count: P - 1 }, page.bytes),
    (e) => e instanceof SchemaError && e.message.includes("entries"),
  );
  assert.throws(() => validateManifestPage("records", page.ref, page.bytes), SchemaError);
  assert.throws(
    () => validateManifestPage("time_shards", { ...page.ref, sha256: "0".repeat(64) }, page.bytes),
    CorruptStore,
  );
  assert.equal(validateManifestPage("time_shards", page.ref, page.bytes).length, P);
});

test("a missing page fails resolution, and refs out of order are refused", async () => {
  const { manifest, pages } = pageManifest(appendManifest(2 * P + 1, 1));
  const { fetch } = pageStore(pages.slice(1));
  await assert.rejects(resolveManifestPages(manifest, fetch), CorruptStore);
  const swapped = { ...manifest, time_shard_pages: [...manifest.time_shard_pages!].reverse() };
  await assert.rejects(resolveManifestPages(swapped, pageStore(pages).fetch), SchemaError);
});

const R = MANIFEST_INDEX_PAGE_SIZE;

test("record page refs move to index pages once there are more than one index page holds", async () => {
  for (const pagesOfRecords of [R, R + 1, 2 * R + 3]) {
    const flags = Array.from({ length: pagesOfRecords * P - 7 }, (_, i) => i % 5 !== 2);
    const m = indexedManifest(flags, 8);
    const { manifest, pages, resolved } = await roundTrip(m);
    assert.deepEqual(resolved, m);
    const index = pages.filter((p) => p.list === "record_pages");
    if (pagesOfRecords <= R) {
      assert.equal(index.length, 0);
      assert.equal(manifest.records!.pages!.length, pagesOfRecords);
      continue;
    }
    assert.equal(manifest.records!.pages, undefined);
    assert.deepEqual(
      manifest.records!.page_index,
      index.map((p) => p.ref),
    );
    assert.equal(index.length, Math.ceil(pagesOfRecords / R));
    // An index page is the canonical JSON of its refs, positions counted in the list of record pages.
    const second = JSON.parse(new TextDecoder().decode(index[1]!.bytes)) as ManifestPageRef[];
    assert.deepEqual(Object.keys(second[0]!), ["count", "first", "sha256"]);
    assert.equal(new TextDecoder().decode(index[1]!.bytes), canonicalJsonUtf8(second));
    assert.equal(index[1]!.ref.first, R);
    assert.equal(second[0]!.first, R * P);
  }
});

test("an index page that is missing, tampered with or out of order fails resolution", async () => {
  const m = indexedManifest(Array(2 * R * P + 1).fill(true), 4);
  const { manifest, pages } = pageManifest(m);
  const index = pages.filter((p) => p.list === "record_pages");
  const others = pages.filter((p) => p.list !== "record_pages");
  await assert.rejects(resolveManifestPages(manifest, pageStore([...others, index[0]!]).fetch), CorruptStore);
  const shuffled = {
    ...manifest,
    records: { ...manifest.records!, page_index: [...index.map((p) => p.ref)].reverse() },
  };
  await assert.rejects(resolveManifestPages(shuffled, pageStore(pages).fetch), SchemaError);
  // An index page whose refs skip a record page: well-formed, hashed right, but not contiguous.
  const refs = JSON.parse(new TextDecoder().decode(index[0]!.bytes)) as ManifestPageRef[];
  const skipping = makeManifestPage("record_pages", 0, [refs[0]!, ...refs.slice(2)]);
  const bad = {
    ...manifest,
    records: { ...manifest.records!, page_index: [skipping.ref, ...index.slice(1).map((p) => p.ref)] },
  };
  await assert.rejects(
    resolveManifestPages(bad, pageStore([...pages, skipping]).fetch),
    (e) => e instanceof SchemaError && e.pointer.startsWith("/records/page_index/"),
  );
  const both = { ...manifest, records: { ...manifest.records!, pages: refs } };
  assert.throws(
    () => validateOutputManifest(both),
    (e) => e instanceof SchemaError && e.pointer === "/records/page_index",
  );
});

test("a paged body under the seed's v2 label is refused; under the paged label it is read", () => {
  const seedLabel = "earthsciio/output-manifest/v2";
  const indexed = pageManifest(indexedManifest(Array(P + 1).fill(true), 1)).manifest;
  const append = pageManifest(appendManifest(P + 1, 1)).manifest;
  for (const paged of [indexed, append]) {
    assert.equal(validateOutputManifest(paged).schema, OUTPUT_MANIFEST_V2_PAGED);
    assert.throws(
      () => validateOutputManifest({ ...paged, schema: seedLabel }),
      (e) => e instanceof SchemaError && /output manifest v2\b/.test(e.message),
    );
  }
  // Every list inline is valid under either label: the label is the store's form, not its size.
  const small = indexedManifest([true, false], 1);
  assert.equal(validateOutputManifest(small).schema, OUTPUT_MANIFEST_V2_PAGED);
  assert.equal(validateOutputManifest({ ...small, schema: seedLabel }).schema, seedLabel);
});

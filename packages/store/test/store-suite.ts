import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ObjectChanged, StoreError } from "@zarr-stream/spec";
import fc from "fast-check";
import { canPutStream, type Store } from "../src/store.js";

/** Keys every backend must refuse, each for a different reason. */
export const BAD_KEYS = [
  "",
  "/abs",
  "/",
  "..",
  "../x",
  "a/..",
  "a/../b",
  "a/../../x",
  ".",
  "./a",
  "a/./b",
  "a//b",
  "a/",
  "a\0b",
  "a\\b",
  "..\\x",
  ".zs-tmp-1-ab",
  "a/.zs-tmp-x/b",
];

/** Keys every backend must accept (dot-files, names that merely contain dots, non-ASCII, chunk paths). */
export const GOOD_KEYS = [".zattrs", "..a", "a..b", "zarr.json", "c/0/1", ".zs-tmpX", "é/ü", "x/y/z/w"];

const BAD_PREFIXES = ["/", "/a", "../", "a/../", "a//", "./", "\\", "a\0"];

export const bytes = (...values: number[]) => Uint8Array.from(values);

/** The contract every Store backend must meet; `makeStore` returns a fresh, empty store per call. */
export function storeSuite(name: string, makeStore: () => Promise<Store> | Store): void {
  describe(`${name} satisfies the Store contract`, () => {
    it("Store.get/getRange/getSuffix/size: an absent key reads as undefined", async () => {
      const s = await makeStore();
      assert.equal(await s.get("nope"), undefined);
      assert.equal(await s.getRange("nope", 0, 4), undefined);
      assert.equal(await s.getSuffix("nope", 4), undefined);
      assert.equal(await s.size("nope"), undefined);
      assert.equal(await s.get("no/such/dir"), undefined);
    });

    it("Store.put: get returns the bytes; a second put replaces them", async () => {
      const s = await makeStore();
      await s.put("a/b/c", bytes(1, 2, 3));
      assert.deepEqual(await s.get("a/b/c"), bytes(1, 2, 3));
      await s.put("a/b/c", bytes(9));
      assert.deepEqual(await s.get("a/b/c"), bytes(9));
      assert.equal(await s.size("a/b/c"), 1);
    });

    it("Store.put: a zero-length object is present, not absent", async () => {
      const s = await makeStore();
      await s.put("empty", new Uint8Array(0));
      assert.deepEqual(await s.get("empty"), new Uint8Array(0));
      assert.equal(await s.size("empty"), 0);
      assert.deepEqual(await s.list(""), ["empty"]);
    });

    it("Store.getRange: [offset, offset+length), shorter at the end, empty past the end", async () => {
      const s = await makeStore();
      await s.put("k", bytes(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
      assert.deepEqual(await s.getRange("k", 2, 3), bytes(2, 3, 4));
      assert.deepEqual(await s.getRange("k", 0, 10), bytes(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
      assert.deepEqual(await s.getRange("k", 8, 100), bytes(8, 9), "length past end");
      assert.deepEqual(await s.getRange("k", 10, 5), new Uint8Array(0), "offset at end");
      assert.deepEqual(await s.getRange("k", 50, 5), new Uint8Array(0), "offset past end");
      assert.deepEqual(await s.getRange("k", 3, 0), new Uint8Array(0), "zero length");
    });

    it("Store.getSuffix: the last n bytes, all of them when n exceeds the size", async () => {
      const s = await makeStore();
      await s.put("k", bytes(5, 6, 7, 8));
      assert.deepEqual(await s.getSuffix("k", 2), bytes(7, 8));
      assert.deepEqual(await s.getSuffix("k", 4), bytes(5, 6, 7, 8));
      assert.deepEqual(await s.getSuffix("k", 1000), bytes(5, 6, 7, 8));
      assert.deepEqual(await s.getSuffix("k", 0), new Uint8Array(0));
    });

    it("Store.getSuffixInto (where offered): what getSuffix returns, written into the caller's buffer", async (t) => {
      const s = await makeStore();
      if (s.getSuffixInto === undefined) {
        // Optional by contract; the stores that have it must say so (FsStore).
        assert.notEqual(name, "FsStore");
        return;
      }
      await s.put("k", bytes(5, 6, 7, 8));
      const into = new Uint8Array(8).fill(0xee);
      for (const n of [0, 2, 4, 1000]) {
        const got = await s.getSuffixInto("k", n, into);
        assert.equal(got, Math.min(n, 4), `n = ${n}`);
        assert.deepEqual(into.subarray(0, got), await s.getSuffix("k", n));
      }
      assert.deepEqual(into.subarray(4), new Uint8Array(4).fill(0xee), "nothing past the suffix is written");
      assert.equal(await s.getSuffixInto("nope", 4, into), undefined);
      await assert.rejects(s.getSuffixInto("k", 4, new Uint8Array(3)), "a buffer too small is refused");
      t.diagnostic(`${name}: getSuffixInto offered`);
    });

    it("Store.getRangeInto (where offered): what getRange returns, written into the caller's buffer", async (t) => {
      const s = await makeStore();
      if (s.getRangeInto === undefined) {
        assert.notEqual(name, "FsStore");
        return;
      }
      await s.put("k", bytes(5, 6, 7, 8));
      const into = new Uint8Array(8).fill(0xee);
      for (const [offset, length] of [
        [0, 0],
        [1, 2],
        [0, 4],
        [2, 1000],
        [4, 3],
        [9, 3],
      ] as const) {
        into.fill(0xee);
        const got = await s.getRangeInto("k", offset, length, into);
        assert.equal(got, Math.max(0, Math.min(length, 4 - offset)), `[${offset}, +${length})`);
        assert.deepEqual(into.subarray(0, got), await s.getRange("k", offset, length));
        assert.deepEqual(into.subarray(got), new Uint8Array(8 - got!).fill(0xee), "nothing past the range");
      }
      assert.equal(await s.getRangeInto("nope", 0, 4, into), undefined);
      await assert.rejects(s.getRangeInto("k", 1, 3, new Uint8Array(2)), "a buffer too small is refused");
      assert.equal(
        await s.getRangeInto("k", 1, 3, new Uint8Array(3)),
        3,
        "a buffer of the range's size is enough",
      );
      t.diagnostic(`${name}: getRangeInto offered`);
    });

    it("standards: range arguments that are not non-negative integers are refused with StoreError", async () => {
      const s = await makeStore();
      await s.put("k", bytes(1, 2, 3));
      for (const [offset, length] of [
        [-1, 2],
        [0, -1],
        [0.5, 1],
        [0, Number.NaN],
        [Number.POSITIVE_INFINITY, 1],
      ] as const) {
        await assert.rejects(s.getRange("k", offset, length), StoreError, `getRange(${offset}, ${length})`);
      }
      await assert.rejects(s.getSuffix("k", -1), StoreError);
      await assert.rejects(s.getSuffix("k", 1.5), StoreError);
    });

    it("Store.delete: removes the object; deleting an absent key is not an error", async () => {
      const s = await makeStore();
      await s.put("d/x", bytes(1));
      await s.put("d/y", bytes(2));
      await s.delete("d/x");
      assert.equal(await s.get("d/x"), undefined);
      assert.deepEqual(await s.get("d/y"), bytes(2));
      await s.delete("d/x");
      await s.delete("never/was");
      assert.deepEqual(await s.list(""), ["d/y"]);
    });

    it("Store.list: sorted by code unit, prefixes may end mid-name", async () => {
      const s = await makeStore();
      const keys = [
        "temperature/c/0/0",
        "temperature/zarr.json",
        "temp",
        "a0",
        "a.x",
        "a-x",
        "a/b",
        "B",
        "zarr.json",
      ];
      for (const key of keys) await s.put(key, bytes(key.length));
      assert.deepEqual(await s.list(""), [...keys].sort());
      assert.deepEqual(await s.list(""), [
        "B",
        "a-x",
        "a.x",
        "a/b",
        "a0",
        "temp",
        "temperature/c/0/0",
        "temperature/zarr.json",
        "zarr.json",
      ]);
      assert.deepEqual(await s.list("temp"), ["temp", "temperature/c/0/0", "temperature/zarr.json"]);
      assert.deepEqual(await s.list("temperature/"), ["temperature/c/0/0", "temperature/zarr.json"]);
      assert.deepEqual(await s.list("temperature/c"), ["temperature/c/0/0"]);
      assert.deepEqual(await s.list("temperature/c/0/0"), ["temperature/c/0/0"]);
      assert.deepEqual(await s.list("a"), ["a-x", "a.x", "a/b", "a0"]);
      assert.deepEqual(await s.list("a/"), ["a/b"]);
      assert.deepEqual(await s.list("nothing"), []);
      assert.deepEqual(await s.list("nothing/deeper/"), []);
    });

    it("Store.putIfAbsent (.firecube Atomicity, creation-only): true and written when absent, false and untouched when present", async () => {
      const s = await makeStore();
      assert.equal(await s.putIfAbsent("claims/0", bytes(1)), true);
      assert.deepEqual(await s.get("claims/0"), bytes(1));
      assert.equal(await s.putIfAbsent("claims/0", bytes(2)), false);
      assert.deepEqual(await s.get("claims/0"), bytes(1));
      assert.deepEqual(await s.list(""), ["claims/0"]);
    });

    it(".firecube Claims: 10 concurrent putIfAbsent on one key, exactly one wins and its bytes are stored", async () => {
      const s = await makeStore();
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => s.putIfAbsent("claims/owner.json", bytes(i, i, i))),
      );
      const winners = results.flatMap((won, i) => (won ? [i] : []));
      assert.equal(winners.length, 1, `winners: ${winners.join(",")}`);
      const w = winners[0]!;
      assert.deepEqual(await s.get("claims/owner.json"), bytes(w, w, w));
      assert.deepEqual(await s.list(""), ["claims/owner.json"]);
    });

    it("§5.4 atomic object: concurrent puts on one key leave exactly one of the written values", async () => {
      const s = await makeStore();
      const values = Array.from({ length: 8 }, (_, i) => new Uint8Array(1000 + i).fill(i));
      await Promise.all(values.map((v) => s.put("race", v)));
      const got = await s.get("race");
      assert.ok(got !== undefined && values.some((v) => Buffer.from(v).equals(got)));
      assert.deepEqual(await s.list(""), ["race"]);
    });

    it("Store keys: every bad key is refused by every method with a StoreError naming it, writing nothing", async () => {
      const s = await makeStore();
      for (const key of BAD_KEYS) {
        const calls: [string, () => Promise<unknown>][] = [
          ["get", () => s.get(key)],
          ["getRange", () => s.getRange(key, 0, 1)],
          ["getSuffix", () => s.getSuffix(key, 1)],
          ["size", () => s.size(key)],
          ["put", () => s.put(key, bytes(1))],
          ["putIfAbsent", () => s.putIfAbsent(key, bytes(1))],
          ["delete", () => s.delete(key)],
        ];
        for (const [method, call] of calls) {
          await assert.rejects(
            call(),
            (err: unknown) => err instanceof StoreError && err.key === key,
            `${method}(${JSON.stringify(key)})`,
          );
        }
      }
      for (const prefix of BAD_PREFIXES) {
        await assert.rejects(s.list(prefix), StoreError, `list(${JSON.stringify(prefix)})`);
      }
      assert.deepEqual(await s.list(""), []);
    });

    it("Store keys: keys that only look unusual are accepted and round-trip", async () => {
      const s = await makeStore();
      for (const [i, key] of GOOD_KEYS.entries()) await s.put(key, bytes(i));
      for (const [i, key] of GOOD_KEYS.entries()) assert.deepEqual(await s.get(key), bytes(i), key);
      assert.deepEqual(await s.list(""), [...GOOD_KEYS].sort());
    });

    it("Store contract: random operation sequences behave like a Map (model check)", async () => {
      // Key pool avoids a key that is also another key's directory: a filesystem cannot hold both.
      const keyArb = fc.constantFrom("a/x", "a/y", "b", "c/d/e", "temp", "temperature/c/0", "A");
      const prefixArb = fc.constantFrom("", "a", "a/", "temp", "c/d/", "z", "temperature/");
      const op = fc.oneof(
        fc.record({ op: fc.constant("put" as const), key: keyArb, fill: fc.nat(255), len: fc.nat(40) }),
        fc.record({
          op: fc.constant("putIfAbsent" as const),
          key: keyArb,
          fill: fc.nat(255),
          len: fc.nat(40),
        }),
        fc.record({ op: fc.constant("delete" as const), key: keyArb }),
        fc.record({ op: fc.constant("get" as const), key: keyArb }),
        fc.record({ op: fc.constant("getRange" as const), key: keyArb, offset: fc.nat(50), len: fc.nat(50) }),
        fc.record({ op: fc.constant("getSuffix" as const), key: keyArb, len: fc.nat(50) }),
        fc.record({ op: fc.constant("size" as const), key: keyArb }),
        fc.record({ op: fc.constant("list" as const), prefix: prefixArb }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 25 }), async (ops) => {
          const s = await makeStore();
          const model = new Map<string, Uint8Array>();
          for (const o of ops) {
            switch (o.op) {
              case "put": {
                const v = new Uint8Array(o.len).fill(o.fill);
                await s.put(o.key, v);
                model.set(o.key, v);
                break;
              }
              case "putIfAbsent": {
                const v = new Uint8Array(o.len).fill(o.fill);
                const expected = !model.has(o.key);
                assert.equal(await s.putIfAbsent(o.key, v), expected);
                if (expected) model.set(o.key, v);
                break;
              }
              case "delete":
                await s.delete(o.key);
                model.delete(o.key);
                break;
              case "get":
                assert.deepEqual(await s.get(o.key), model.get(o.key));
                break;
              case "getRange":
                assert.deepEqual(
                  await s.getRange(o.key, o.offset, o.len),
                  model.get(o.key)?.slice(o.offset, o.offset + o.len),
                );
                break;
              case "getSuffix": {
                const m = model.get(o.key);
                assert.deepEqual(await s.getSuffix(o.key, o.len), m?.slice(Math.max(0, m.length - o.len)));
                break;
              }
              case "size":
                assert.equal(await s.size(o.key), model.get(o.key)?.length);
                break;
              case "list":
                assert.deepEqual(
                  await s.list(o.prefix),
                  [...model.keys()].filter((k) => k.startsWith(o.prefix)).sort(),
                );
                break;
            }
          }
        }),
        { numRuns: 40 },
      );
    });
  });
}

/** The optional streamed write (putStream) the journal's compaction and export use. */
export function streamingStoreSuite(name: string, makeStore: () => Promise<Store> | Store): void {
  describe(`${name} streamed writes (putStream)`, () => {
    it("Store.putStream: the chunks make the object, replacing it; with ifAbsent a present key is untouched", async () => {
      const s = await makeStore();
      assert.ok(canPutStream(s));
      async function* chunks(...parts: number[][]) {
        for (const p of parts) yield Uint8Array.from(p);
      }
      assert.equal(await s.putStream("j/a", chunks([1, 2], [], [3])), true);
      assert.deepEqual(await s.get("j/a"), bytes(1, 2, 3));
      assert.equal(await s.putStream("j/a", chunks([9])), true);
      assert.deepEqual(await s.get("j/a"), bytes(9));
      assert.equal(await s.putStream("j/a", chunks([7, 7]), { ifAbsent: true }), false);
      assert.deepEqual(await s.get("j/a"), bytes(9));
      assert.equal(await s.putStream("j/b", chunks(), { ifAbsent: true }), true);
      assert.deepEqual(await s.get("j/b"), new Uint8Array(0));
      // One buffer refilled between chunks: the store copies each before it asks for the next.
      const reused = Buffer.alloc(3);
      async function* refilled() {
        for (let i = 0; i < 4; i++) yield reused.fill(i);
      }
      assert.equal(await s.putStream("j/c", refilled()), true);
      assert.deepEqual(await s.get("j/c"), bytes(0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3));
      assert.deepEqual(await s.list(""), ["j/a", "j/b", "j/c"]);
    });

    it("Store.putStream: a source that fails rejects with its own error and leaves nothing behind", async () => {
      const s = await makeStore();
      assert.ok(canPutStream(s));
      const boom = new Error("source failed");
      async function* failing() {
        yield bytes(1, 2);
        throw boom;
      }
      await assert.rejects(s.putStream("j/x", failing()), (e: unknown) => e === boom);
      await s.put("j/y", bytes(5));
      await assert.rejects(s.putStream("j/y", failing()), (e: unknown) => e === boom);
      assert.deepEqual(await s.get("j/y"), bytes(5));
      assert.deepEqual(await s.list(""), ["j/y"]);
      await assert.rejects(s.putStream("../x", failing()), StoreError);
    });
  });
}

type VersionedStore = Store & Required<Pick<Store, "getVersioned" | "putIfVersion">>;

/** The optional compare-and-swap pair (getVersioned/putIfVersion) the owner's manifest write relies on. */
export function versionedStoreSuite(name: string, makeStore: () => Promise<VersionedStore> | VersionedStore) {
  describe(`${name} compare-and-swap (getVersioned/putIfVersion)`, () => {
    it("Store.putIfVersion: null creates only when absent; the returned version is what getVersioned reports", async () => {
      const s = await makeStore();
      assert.equal(await s.getVersioned("m.json"), undefined);
      const v1 = await s.putIfVersion("m.json", bytes(1), null);
      assert.ok(typeof v1 === "string" && v1 !== "");
      assert.deepEqual(await s.getVersioned("m.json"), { bytes: bytes(1), version: v1 });
      assert.equal(await s.putIfVersion("m.json", bytes(2), null), undefined, "present: null fails");
      assert.deepEqual(await s.get("m.json"), bytes(1));
    });

    it("Store.putIfVersion: succeeds on the current version, fails (writing nothing) on a stale one", async () => {
      const s = await makeStore();
      const v1 = (await s.putIfVersion("m.json", bytes(1), null))!;
      const v2 = await s.putIfVersion("m.json", bytes(2, 2), v1);
      assert.ok(v2 !== undefined && v2 !== v1);
      assert.equal(await s.putIfVersion("m.json", bytes(3), v1), undefined, "stale version");
      assert.deepEqual(await s.getVersioned("m.json"), { bytes: bytes(2, 2), version: v2 });
      await s.put("m.json", bytes(4, 4, 4));
      assert.equal(await s.putIfVersion("m.json", bytes(5), v2), undefined, "a plain put moved the version");
      const current = (await s.getVersioned("m.json"))!;
      assert.deepEqual(current.bytes, bytes(4, 4, 4));
      assert.ok((await s.putIfVersion("m.json", bytes(6), current.version)) !== undefined);
      assert.deepEqual(await s.get("m.json"), bytes(6));
    });

    it("Store.putIfVersion: a version on an absent key fails; a deleted key takes null again", async () => {
      const s = await makeStore();
      const v = (await s.putIfVersion("k", bytes(1), null))!;
      await s.delete("k");
      assert.equal(await s.putIfVersion("k", bytes(2), v), undefined);
      assert.equal(await s.get("k"), undefined);
      assert.ok((await s.putIfVersion("k", bytes(3), null)) !== undefined);
    });

    it("Store.putIfVersion: 8 concurrent swaps from one version, exactly one wins and its bytes are stored", async () => {
      const s = await makeStore();
      const v0 = (await s.putIfVersion("manifest.json", bytes(0), null))!;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => s.putIfVersion("manifest.json", bytes(i + 1, i + 1), v0)),
      );
      const winners = results.flatMap((v, i) => (v !== undefined ? [i] : []));
      assert.equal(winners.length, 1, `winners: ${winners.join(",")}`);
      const stored = (await s.getVersioned("manifest.json"))!;
      const w = winners.find((i) => results[i] === stored.version)! + 1;
      assert.ok(w > 0, "the stored version is a winner's");
      assert.deepEqual(stored, { bytes: bytes(w, w), version: results[w - 1] });
      assert.deepEqual(await s.list(""), ["manifest.json"]);
    });

    it("standards: putIfVersion refuses a bad key or an empty expected version with StoreError, writing nothing", async () => {
      const s = await makeStore();
      for (const key of BAD_KEYS) {
        await assert.rejects(
          s.putIfVersion(key, bytes(1), null),
          (e: unknown) => e instanceof StoreError && e.key === key,
        );
        await assert.rejects(s.getVersioned(key), StoreError);
      }
      await assert.rejects(s.putIfVersion("k", bytes(1), ""), StoreError);
      await assert.rejects(s.putIfVersion("k", "x" as unknown as Uint8Array, null), StoreError);
      assert.deepEqual(await s.list(""), []);
    });
  });
}

type PinningStore = Store & Required<Pick<Store, "pin">>;

/**
 * The pin capability (reads of one version). `keepsOpen` stores (FsStore) go on reading the version they
 * opened after a replace or delete; the others refuse the next read with ObjectChanged. Neither may hand
 * out a byte of the new version.
 */
export function pinnedStoreSuite(
  name: string,
  makeStore: () => Promise<PinningStore> | PinningStore,
  keepsOpen: boolean,
): void {
  const old = Uint8Array.from({ length: 64 }, (_, i) => i);
  const replacement = Uint8Array.from({ length: 80 }, (_, i) => 200 - i);
  /** The next read through `pinned` after the object changed: the old bytes, or ObjectChanged. */
  const afterChange = async (read: () => Promise<Uint8Array | undefined>, expected: Uint8Array) => {
    if (keepsOpen) return assert.deepEqual(await read(), expected);
    await assert.rejects(read(), (err: unknown) => {
      assert.ok(err instanceof ObjectChanged, String(err));
      assert.equal(err.key, "shard");
      return true;
    });
  };

  describe(`${name} pinned reads (pin)`, () => {
    it("Store.pin: ranges and suffixes read the object; an absent object reads as undefined", async () => {
      const s = await makeStore();
      await s.put("shard", old);
      const pinned = s.pin("shard");
      try {
        assert.deepEqual(await pinned.getSuffix(8), old.slice(56));
        assert.deepEqual(await pinned.getRange(4, 6), old.slice(4, 10));
        assert.deepEqual(await pinned.getRange(60, 10), old.slice(60), "a range past the end is cut");
        assert.deepEqual(await pinned.getRange(3, 0), new Uint8Array(0));
        if (pinned.getRangeInto !== undefined) {
          const into = new Uint8Array(8);
          assert.equal(await pinned.getRangeInto(10, 8, into), 8);
          assert.deepEqual(into, old.slice(10, 18));
        }
      } finally {
        await pinned.close();
      }
      const absent = s.pin("nope");
      assert.equal(await absent.getSuffix(4), undefined);
      assert.equal(await absent.getRange(0, 4), undefined);
      await absent.close();
    });

    it(`Store.pin: after the object is replaced, reads ${keepsOpen ? "still see the pinned version" : "throw ObjectChanged"}, never the new bytes`, async () => {
      const s = await makeStore();
      await s.put("shard", old);
      const pinned = s.pin("shard");
      try {
        assert.deepEqual(await pinned.getSuffix(16), old.slice(48));
        await s.put("shard", replacement);
        await afterChange(() => pinned.getRange(0, 16), old.slice(0, 16));
        await afterChange(() => pinned.getSuffix(4), old.slice(60));
        await afterChange(() => pinned.getRange(8, 0), new Uint8Array(0));
      } finally {
        await pinned.close();
      }
      const fresh = s.pin("shard");
      assert.deepEqual(
        await fresh.getRange(0, 4),
        replacement.slice(0, 4),
        "a new pin reads the new version",
      );
      assert.deepEqual(await fresh.getSuffix(4), replacement.slice(76));
      await fresh.close();
    });

    it(`Store.pin: after the object is deleted, reads ${keepsOpen ? "still see the pinned version" : "throw ObjectChanged"}`, async () => {
      const s = await makeStore();
      await s.put("shard", old);
      const pinned = s.pin("shard");
      try {
        assert.deepEqual(await pinned.getRange(0, 4), old.slice(0, 4));
        await s.delete("shard");
        await afterChange(() => pinned.getSuffix(4), old.slice(60));
      } finally {
        await pinned.close();
      }
    });

    it("Store.pin: refuses a bad key before any read", async () => {
      const s = await makeStore();
      assert.throws(() => s.pin("../x"), StoreError);
    });
  });
}

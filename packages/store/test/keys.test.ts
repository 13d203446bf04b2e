import assert from "node:assert/strict";
import { relative, resolve, sep } from "node:path";
import { describe, it } from "node:test";
import { StoreError } from "@zarr-stream/spec";
import fc from "fast-check";
import { assertValidKey, assertValidPrefix } from "../src/keys.js";

const accepts = (key: string) => {
  try {
    assertValidKey(key);
    return true;
  } catch (err) {
    assert.ok(err instanceof StoreError, "refusals are StoreError");
    assert.equal(err.key, key, "the error names the key");
    return false;
  }
};

// Strings built from the characters that matter to path handling, so bad shapes come up often.
const pathish = fc.string({
  unit: fc.constantFrom(".", "/", "\\", "\0", "a", "b", "-", ".zs-tmp-"),
  maxLength: 12,
});
const goodSegment = fc
  .string({ unit: fc.constantFrom("a", "z", "0", ".", "-", "_", "é"), minLength: 1, maxLength: 6 })
  .filter((s) => s !== "." && s !== ".." && !s.startsWith(".zs-tmp-"));

describe("Store key confinement", () => {
  it("Store keys: every accepted key resolves strictly inside the root", () => {
    const root = resolve("/srv/store");
    fc.assert(
      fc.property(pathish, (key) => {
        if (!accepts(key)) return;
        const full = resolve(root, key);
        const rel = relative(root, full);
        assert.ok(full.startsWith(root + sep), `${JSON.stringify(key)} -> ${full}`);
        assert.ok(rel !== "" && !rel.split(sep).includes(".."), `${JSON.stringify(key)} escapes`);
        assert.equal(rel.split(sep).join("/"), key, "the key is its own path: no normalisation happened");
      }),
      { numRuns: 2000 },
    );
  });

  it("Store keys: any '/'-join of valid segments is accepted, and inserting a bad segment is refused", () => {
    const bad = fc.constantFrom("", ".", "..", ".zs-tmp-0", "a\\b", "a\0");
    fc.assert(
      fc.property(fc.array(goodSegment, { minLength: 1, maxLength: 5 }), bad, fc.nat(), (segs, b, at) => {
        assert.ok(accepts(segs.join("/")), segs.join("/"));
        const spoiled = [...segs];
        spoiled.splice(at % (segs.length + 1), 0, b);
        assert.equal(accepts(spoiled.join("/")), false, JSON.stringify(spoiled.join("/")));
        assert.equal(accepts(`/${segs.join("/")}`), false);
      }),
      { numRuns: 500 },
    );
  });

  it("Store.list prefixes: a trailing partial segment is free, earlier segments follow the key rules", () => {
    for (const ok of ["", "temp", "temperature/", "a/b/c", "a/.", "a/..", "a/.zs"])
      assert.doesNotThrow(() => assertValidPrefix(ok), ok);
    for (const no of ["/", "../", "a/../b", "a//", "./x", ".zs-tmp-1/x", "a\\", "\0"]) {
      assert.throws(() => assertValidPrefix(no), StoreError, JSON.stringify(no));
    }
  });
});

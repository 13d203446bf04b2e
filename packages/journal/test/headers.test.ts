import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  assertHeaderPrefix,
  JournalError,
  mergeCsvHeaders,
  parseCsvHeaderLine,
  renderCsvHeaderLine,
} from "../src/index.js";

describe("seed 004 csv headers", () => {
  test("invariant 1: mergeCsvHeaders only appends", () => {
    assert.deepEqual(mergeCsvHeaders([], ["a", "b"]), ["a", "b"]);
    assert.deepEqual(mergeCsvHeaders(["a", "b"], ["a"]), ["a", "b"]);
    assert.deepEqual(mergeCsvHeaders(["a", "b"], ["a", "b", "c"]), ["a", "b", "c"]);
    assert.deepEqual(mergeCsvHeaders(["a", "b"], ["c", "a"]), ["a", "b", "c"]);
    assert.deepEqual(mergeCsvHeaders(["a"], ["a", "a"]), ["a", "a"]);
  });

  test("invariant 1: a header that is not a prefix of the union is a JournalError naming where", () => {
    assert.doesNotThrow(() => assertHeaderPrefix(["a"], ["a", "b"], "p1"));
    assert.throws(
      () => assertHeaderPrefix(["c", "a"], mergeCsvHeaders(["a", "b"], ["c", "a"]), "journal-p000003"),
      (e: unknown) =>
        e instanceof JournalError && e.reason === "header-prefix" && e.message.includes("journal-p000003"),
    );
  });

  test("invariant 7: quoted header cells with commas and quotes parse as one cell and round-trip", () => {
    const line = 'id,"lat,lon","say ""hi""",';
    const cells = parseCsvHeaderLine(line);
    assert.deepEqual(cells, ["id", "lat,lon", 'say "hi"', ""]);
    assert.equal(renderCsvHeaderLine(cells), line);
    assert.deepEqual(parseCsvHeaderLine(""), []);
    assert.deepEqual(parseCsvHeaderLine('""'), [""]);
    assert.equal(renderCsvHeaderLine([""]), '""');
    assert.throws(() => parseCsvHeaderLine('a,"b'), JournalError);
  });
});

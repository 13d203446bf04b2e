import assert from "node:assert/strict";
import { test } from "node:test";
import { SchemaError, validateJournalRow } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { publishPart, SqliteJournalRegistry } from "../src/index.js";
import { enc } from "./helpers.js";

test("row configuration: published rows pass the spec schema; invariant 6 keys start/len are refused", async () => {
  const registry = new SqliteJournalRegistry(":memory:");
  const { row } = await publishPart({
    registry,
    store: new MemoryStore(),
    part: enc("a\r\n1\r\n"),
    format: "csv",
  });
  assert.deepEqual(validateJournalRow(JSON.parse(JSON.stringify(row.config))), row.config);
  for (const [patch, pointer] of [
    [{ start: 0 }, "/"],
    [{ len: 3 }, "/"],
    [{ journalFormat: "heatx" }, "/journalFormat"],
    [{ partMd5: "XYZ" }, "/partMd5"],
    [{ artefactParts: [] }, "/artefactParts"],
    [{ supersededAtUtc: "last week" }, "/supersededAtUtc"],
  ] as const) {
    assert.throws(
      () => validateJournalRow({ ...row.config, ...patch }),
      (e: unknown) => e instanceof SchemaError && e.pointer === pointer && e.document === "journal row",
      JSON.stringify(patch),
    );
  }
});

test("registry refuses a patch that breaks a cross-key rule (csvHeaderCount, deltaMd5, supersession on a live row)", async () => {
  const registry = new SqliteJournalRegistry(":memory:");
  await publishPart({ registry, store: new MemoryStore(), part: enc("a\r\n1\r\n"), format: "csv" });
  await assert.rejects(
    registry.patch([{ outputIdentifier: "journal-p000000", patch: { csvHeaderCount: 2 } }]),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/csvHeaderCount",
  );
  await assert.rejects(
    registry.patch([{ outputIdentifier: "journal-p000000", patch: { deltaMd5: "0".repeat(32) } }]),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/deltaMd5",
  );
  await assert.rejects(
    registry.patch([
      { outputIdentifier: "journal-p000000", patch: { supersededByOutputId: "journal-p000001" } },
    ]),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/artefactState",
  );
  assert.equal((await registry.current())?.config.csvHeaderCount, 1);
});

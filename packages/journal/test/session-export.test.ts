import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { CorruptShard } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import {
  exportSession,
  exportSessionToStream,
  JournalError,
  publishPart,
  SqliteJournalRegistry,
} from "../src/index.js";
import { clock, enc, tempDir, text } from "./helpers.js";

const python = findPython({ modules: ["zipfile"] });

const CHECK_ZIP = `
import hashlib, json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    assert z.testzip() is None, "bad CRC"
    index = json.loads(z.read("index.json"))
    out = []
    for part in index["parts"]:
        data = z.read(part["entry"])
        info = z.getinfo(part["entry"])
        assert info.compress_type == zipfile.ZIP_STORED
        out.append({"entry": part["entry"], "size": len(data), "md5": hashlib.md5(data).hexdigest(),
                    "indexSize": part["size"], "indexMd5": part["md5"], "text": data.decode()})
    print(json.dumps({"names": z.namelist(), "parts": out}))
`;

test(
  "session export: each part its own STORE zip entry plus an index with md5 and size (python zipfile)",
  {
    skip: python.skip,
  },
  async (t) => {
    const registry = new SqliteJournalRegistry(":memory:");
    const store = new MemoryStore();
    const now = clock();
    const parts = ["a\r\n1\r\n", "a,b\r\n2,3\r\n", "a,b\r\n4,5\r\n"];
    for (const p of parts)
      await publishPart({ registry, store, now, part: enc(p), format: "csv", maxParts: 2 });
    const zip = await exportSession(registry, store);
    const file = join(tempDir(t, "export"), "session.zip");
    writeFileSync(file, zip);
    const run = spawnSync(python.require(), ["-c", CHECK_ZIP, file], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    const result = JSON.parse(run.stdout) as {
      names: string[];
      parts: {
        entry: string;
        size: number;
        md5: string;
        indexSize: number;
        indexMd5: string;
        text: string;
      }[];
    };
    assert.deepEqual(result.names, [
      "parts/journal-p000000.csv",
      "parts/journal-p000001.csv",
      "parts/journal-p000002.csv",
      "index.json",
    ]);
    // The third row is a compaction: its own part blob is the composite, and that is what is exported.
    const ownParts = [parts[0], parts[1], "a,b\r\n1,\r\n2,3\r\n4,5\r\n"];
    result.parts.forEach((p, i) => {
      assert.equal(p.text, ownParts[i]);
      assert.equal(p.indexSize, p.size);
      assert.equal(p.indexMd5, p.md5);
      assert.equal(p.md5, createHash("md5").update(ownParts[i]!).digest("hex"));
    });
  },
);

test("session export refuses a part whose bytes no longer match its row (md5/size)", async () => {
  const registry = new SqliteJournalRegistry(":memory:");
  const store = new MemoryStore();
  await publishPart({ registry, store, part: enc("a\r\n1\r\n"), format: "csv" });
  await store.put("journal/journal-p000000.csv", enc("a\r\n9\r\n"));
  await assert.rejects(
    exportSession(registry, store),
    (e: unknown) => e instanceof CorruptShard && e.key === "journal/journal-p000000.csv",
  );
});

test("session export checks every part before it writes a byte, and refuses a part replaced while exported", async () => {
  const registry = new SqliteJournalRegistry(":memory:");
  const store = new MemoryStore();
  for (const p of ["a\r\n1\r\n", "a\r\n2\r\n"])
    await publishPart({ registry, store, part: enc(p), format: "csv" });
  await store.put("journal/journal-p000001.csv", enc("a\r\n3\r\n"));
  let written = 0;
  await assert.rejects(
    exportSessionToStream(registry, store, (b) => {
      written += b.length;
    }),
    CorruptShard,
  );
  assert.equal(written, 0, "nothing is written for a journal whose parts do not match their rows");
  await store.put("journal/journal-p000001.csv", enc("a\r\n2\r\n"));
  /** Serves each part's recorded bytes to the check, and other bytes of the same size to the copy. */
  class Swapping extends MemoryStore {
    reads = 0;
    override async getRange(key: string, offset: number, length: number): Promise<Uint8Array | undefined> {
      const bytes = await super.getRange(key, offset, length);
      return ++this.reads > 2 && bytes ? enc(text(bytes).replace("2", "7")) : bytes;
    }
  }
  const swapping = new Swapping();
  for (const k of await store.list("")) await swapping.put(k, (await store.get(k))!);
  await assert.rejects(
    exportSessionToStream(registry, swapping, () => {}),
    (e: unknown) => e instanceof JournalError && e.reason === "zip" && /journal-p000001/.test(e.message),
  );
});

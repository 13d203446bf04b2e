import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryStore } from "../src/memory-store.js";
import {
  bytes,
  pinnedStoreSuite,
  storeSuite,
  streamingStoreSuite,
  versionedStoreSuite,
} from "./store-suite.js";

storeSuite("MemoryStore", () => new MemoryStore());
streamingStoreSuite("MemoryStore", () => new MemoryStore());
versionedStoreSuite("MemoryStore", () => new MemoryStore());
pinnedStoreSuite("MemoryStore", () => new MemoryStore(), false);

describe("MemoryStore copies", () => {
  it("MemoryStore: changing the array passed to put does not change the stored object", async () => {
    const s = new MemoryStore();
    const v = bytes(1, 2, 3);
    await s.put("k", v);
    v[0] = 99;
    assert.deepEqual(await s.get("k"), bytes(1, 2, 3));
    const w = bytes(4);
    await s.putIfAbsent("p", w);
    w[0] = 99;
    assert.deepEqual(await s.get("p"), bytes(4));
  });

  it("MemoryStore: changing a returned array does not change the stored object", async () => {
    const s = new MemoryStore();
    await s.put("k", bytes(1, 2, 3));
    for (const got of [await s.get("k"), await s.getRange("k", 0, 3), await s.getSuffix("k", 3)]) {
      assert.ok(got !== undefined);
      got[0] = 99;
    }
    assert.deepEqual(await s.get("k"), bytes(1, 2, 3));
  });

  it("Store.url: memory://<name>, unique per unnamed store", () => {
    assert.equal(new MemoryStore("run-1").url, "memory://run-1");
    assert.notEqual(new MemoryStore().url, new MemoryStore().url);
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { FsStore } from "../src/fs-store.js";
import { MemoryStore } from "../src/memory-store.js";
import { copyStore, snapshotStore } from "../src/snapshot.js";
import { bytes } from "./store-suite.js";

const roots = tempRoots("store-snap");

describe("copyStore and snapshotStore", () => {
  it("copyStore: every object arrives byte-identical and the snapshots of both stores are equal", async () => {
    const from = new MemoryStore();
    const objects: [string, Uint8Array][] = [
      ["zarr.json", bytes(123, 125)],
      ["temperature/zarr.json", bytes(1)],
      ["temperature/c/0/0/0", new Uint8Array(70_000).map((_, i) => i % 251)],
      ["empty", new Uint8Array(0)],
    ];
    for (const [k, v] of objects) await from.put(k, v);
    const to = new FsStore(roots.fresh());
    await to.put("zarr.json", bytes(0));
    const copied = await copyStore(from, to);
    assert.deepEqual(copied, objects.map(([k]) => k).sort());
    const a = await snapshotStore(from);
    const b = await snapshotStore(to);
    assert.deepEqual([...b.keys()], [...a.keys()]);
    assert.deepEqual(b, a);
    assert.deepEqual(b, new Map([...objects].sort(([x], [y]) => (x < y ? -1 : 1))));
  });

  it("snapshotStore: a snapshot does not change when the store changes afterwards", async () => {
    const s = new MemoryStore();
    await s.put("k", bytes(1));
    const before = await snapshotStore(s);
    await s.put("k", bytes(2));
    await s.put("new", bytes(3));
    assert.deepEqual(before, new Map([["k", bytes(1)]]));
    assert.notDeepEqual(await snapshotStore(s), before);
  });
});

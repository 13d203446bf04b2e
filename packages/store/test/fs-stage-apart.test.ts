import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, utimesSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { FsStore } from "../src/fs-store.js";
import { bytes } from "./store-suite.js";

const roots = tempRoots("store-apart");

/** The lock file name stageApart uses for a key (a digest of it), as fs-staging makes it. */
function lockNameOf(key: string): string {
  return `.zs-tmp-lock-${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;
}

describe("FsStore.stageApart", () => {
  it("staging files of keys under the prefix go to <prefix>.zs-tmp-staging/, never the key's directory", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    s.stageApart("cp/");
    s.stageApart("cp/");
    await s.put("cp/claims/a.json", bytes(1));
    assert.equal(await s.putIfAbsent("cp/claims/b.json", bytes(2)), true);
    assert.equal(await s.putIfAbsent("cp/claims/b.json", bytes(3)), false);
    const v = (await s.putIfVersion("cp/claims/c.json", bytes(4), null))!;
    assert.ok((await s.putIfVersion("cp/claims/c.json", bytes(5), v)) !== undefined);
    await s.put("other/x", bytes(6));
    assert.deepEqual(readdirSync(join(root, "cp", "claims")).sort(), ["a.json", "b.json", "c.json"]);
    assert.deepEqual(readdirSync(join(root, "cp", ".zs-tmp-staging")), [], "no file is left after a write");
    assert.deepEqual(await s.list(""), [
      "cp/claims/a.json",
      "cp/claims/b.json",
      "cp/claims/c.json",
      "other/x",
    ]);
    assert.deepEqual(await s.get("cp/claims/c.json"), bytes(5));
    assert.throws(() => s.stageApart("cp"), /must end in "\/"/);
  });

  it("a streamed write of a key set apart stages in the staging directory while the stream runs", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    s.stageApart("cp/");
    await s.put("cp/claims/a.json", bytes(1));
    let during: { beside: string[]; apart: string[] } | undefined;
    async function* chunks() {
      yield bytes(7);
      // The first chunk is written: the staging file exists now.
      during = {
        beside: readdirSync(join(root, "cp", "claims")),
        apart: readdirSync(join(root, "cp", ".zs-tmp-staging")),
      };
      yield bytes(8);
    }
    assert.equal(await s.putStream("cp/claims/s.json", chunks()), true);
    assert.deepEqual(during?.beside, ["a.json"], "nothing staged beside the key");
    assert.equal(during?.apart.length, 1, "one staging file apart");
    assert.deepEqual(await s.get("cp/claims/s.json"), bytes(7, 8));
    assert.deepEqual(readdirSync(join(root, "cp", ".zs-tmp-staging")), []);
  });

  it("a putIfVersion of a key set apart takes its lock in the staging directory: a live lock there holds it back", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    s.stageApart("cp/");
    const v = (await s.putIfVersion("cp/claims/m.json", bytes(1), null))!;
    const lock = join(root, "cp", ".zs-tmp-staging", lockNameOf("cp/claims/m.json"));
    writeFileSync(lock, "other process\n");
    let done = false;
    const swap = s.putIfVersion("cp/claims/m.json", bytes(2), v).then((r) => {
      done = true;
      return r;
    });
    await sleep(300);
    assert.equal(done, false, "waited for the lock");
    assert.deepEqual(readdirSync(join(root, "cp", "claims")), ["m.json"], "nothing beside the key");
    await rm(lock);
    assert.ok((await swap) !== undefined);
    assert.deepEqual(await s.get("cp/claims/m.json"), bytes(2));
  });

  it("a stale lock in the staging directory is broken like one beside the key", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    s.stageApart("cp/");
    const v = (await s.putIfVersion("cp/m", bytes(1), null))!;
    const lock = join(root, "cp", ".zs-tmp-staging", lockNameOf("cp/m"));
    writeFileSync(lock, "dead process\n");
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    assert.ok((await s.putIfVersion("cp/m", bytes(3), v)) !== undefined);
    assert.deepEqual(readdirSync(join(root, "cp", ".zs-tmp-staging")), []);
    assert.deepEqual(await s.list(""), ["cp/m"]);
  });
});

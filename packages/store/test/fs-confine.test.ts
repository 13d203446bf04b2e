import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileIoBackend } from "@zarr-stream/fileio";
import { SymlinkRefused } from "@zarr-stream/spec";
import { startSwapper, swapSkipReason } from "@zarr-stream/test-support/swap";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { DIRECT_WRITE_MIN } from "../src/direct-writes.js";
import { ConfinedDir } from "../src/fs-confine.js";
import { FsStore } from "../src/fs-store.js";
import { nodeFsOnly } from "./node-fs-only.js";

const roots = tempRoots("store-confine");
const SECRET = "SECRET OUTSIDE THE ROOT";

/**
 * root/in/f (a file), root/evil -> outside and root/in/leak -> outside/secret (links that lead out),
 * root/alias -> in and root/in/same -> f (links that stay inside): FsStore follows none of them.
 */
function tree() {
  const base = roots.fresh();
  const root = join(base, "root");
  const outside = join(base, "outside");
  mkdirSync(join(root, "in"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "secret"), SECRET);
  // Named as the file inside is: a read of in/f through a link in place of in/ would find it.
  writeFileSync(join(outside, "f"), SECRET);
  writeFileSync(join(root, "in", "f"), "inside");
  symlinkSync(outside, join(root, "evil"), "dir");
  symlinkSync(join(outside, "secret"), join(root, "in", "leak"));
  symlinkSync("in", join(root, "alias"), "dir");
  symlinkSync("f", join(root, "in", "same"));
  return { root, outside };
}

/** Every Store operation on `key`, each expected to reject with SymlinkRefused. */
function everyOperation(s: FsStore, key: string, big: Uint8Array) {
  const into = new Uint8Array(DIRECT_WRITE_MIN * 2);
  return {
    get: () => s.get(key),
    getRange: () => s.getRange(key, 0, 4),
    "getRange (large)": () => s.getRange(key, 0, 2 << 20),
    getSuffix: () => s.getSuffix(key, 4),
    getRangeInto: () => s.getRangeInto(key, 0, 4, into),
    getSuffixInto: () => s.getSuffixInto(key, 4, into),
    size: () => s.size(key),
    version: () => s.version(key),
    getVersioned: () => s.getVersioned(key),
    "pin().getRange": async () => {
      const p = s.pin(key);
      try {
        return await p.getRange(0, 4);
      } finally {
        await p.close();
      }
    },
    "pin().getSuffixInto": async () => {
      const p = s.pin(key);
      try {
        return await p.getSuffixInto!(4, into);
      } finally {
        await p.close();
      }
    },
    put: () => s.put(key, new Uint8Array([1])),
    "put (direct-write size)": () => s.put(key, big),
    putIfAbsent: () => s.putIfAbsent(key, big),
    "putIfVersion (create)": () => s.putIfVersion(key, big, null),
    "putIfVersion (replace)": () => s.putIfVersion(key, new Uint8Array([1]), "f1-1-1"),
    delete: () => s.delete(key),
  };
}

for (const [name, make] of [
  ["native file I/O", (root: string) => new FsStore(root)],
  ["node:fs alone", (root: string) => nodeFsOnly(() => new FsStore(root))],
] as const) {
  describe(`FsStore confinement [${name}]`, () => {
    it("the file I/O path under test is the one named", () => {
      const s = make(roots.fresh());
      if (name === "native file I/O")
        assert.equal(fileIoBackend().backend, "native", `the addon is not built: ${fileIoBackend().reason}`);
      assert.ok(s instanceof FsStore);
    });

    it("every read, write, delete and list through a link that leads out is refused (SymlinkRefused); nothing outside is read, made or changed", async () => {
      const { root, outside } = tree();
      const s = make(root);
      const big = new Uint8Array(DIRECT_WRITE_MIN + 4097).fill(7);
      for (const key of ["evil/secret", "in/leak", "evil/new/deep"]) {
        for (const [op, run] of Object.entries(everyOperation(s, key, big))) {
          await assert.rejects(run(), SymlinkRefused, `${op}(${key})`);
        }
      }
      await assert.rejects(s.list("evil/"), SymlinkRefused);
      await assert.rejects(s.list("evil/se"), SymlinkRefused);
      assert.deepEqual(await s.list(""), ["in/f"], "list walks no link");
      assert.deepEqual(readdirSync(outside).sort(), ["f", "secret"]);
      assert.equal(readFileSync(join(outside, "secret"), "utf8"), SECRET);
    });

    it("a link that stays inside the root is refused too, and the real paths still work", async () => {
      const { root } = tree();
      const s = make(root);
      const big = new Uint8Array(DIRECT_WRITE_MIN + 1).fill(3);
      for (const key of ["alias/f", "in/same"]) {
        for (const [op, run] of Object.entries(everyOperation(s, key, big))) {
          await assert.rejects(run(), SymlinkRefused, `${op}(${key})`);
        }
      }
      assert.equal(readFileSync(join(root, "in", "f"), "utf8"), "inside", "nothing written through a link");
      assert.deepEqual(await s.get("in/f"), new TextEncoder().encode("inside"));
      await s.put("in/g/h", big);
      assert.deepEqual(await s.get("in/g/h"), big);
      assert.deepEqual(await s.list("in/"), ["in/f", "in/g/h"]);
      await s.delete("in/g/h");
      assert.equal(await s.size("in/g/h"), undefined);
    });

    it(
      "a directory swapped for a link out of the root while reads, writes and deletes run never reaches outside",
      { skip: swapSkipReason() },
      async () => {
        const { root, outside } = tree();
        const s = make(root);
        const inside = new TextEncoder().encode("inside");
        const big = new Uint8Array(DIRECT_WRITE_MIN + 1).fill(5);
        const counts = { read: 0, refused: 0, written: 0 };
        /** What an operation may do during the race: succeed inside, or be refused. */
        const outcome = async (run: () => Promise<unknown>) => {
          try {
            const got = await run();
            if (got instanceof Uint8Array) {
              assert.ok(
                !new TextDecoder().decode(got).includes(SECRET),
                "a read returned bytes from outside",
              );
              assert.deepEqual(got, inside);
              counts.read++;
            }
          } catch (err) {
            if (!(err instanceof SymlinkRefused)) throw err;
            counts.refused++;
          }
        };
        const swapper = await startSwapper(join(root, "in"), join(root, "evil"));
        try {
          for (let i = 0; i < 400; i++) {
            await Promise.all([
              outcome(() => s.get("in/f")),
              outcome(() => s.getRange("in/f", 0, 64)),
              outcome(async () => {
                const p = s.pin("in/f");
                try {
                  return await p.getRange(0, 64);
                } finally {
                  await p.close();
                }
              }),
              outcome(async () => {
                await s.put(`in/w${i}`, i % 4 === 0 ? big : inside);
                counts.written++;
              }),
              outcome(() => s.delete(`in/w${i - 1}`)),
              outcome(() => s.list("in/")),
            ]);
          }
        } finally {
          const { running, stderr } = await swapper.stop();
          assert.ok(running, `the swapper kept running: ${stderr}`);
        }
        assert.deepEqual(readdirSync(outside).sort(), ["f", "secret"], "nothing was written outside");
        assert.equal(readFileSync(join(outside, "f"), "utf8"), SECRET);
        assert.ok(counts.read > 0 && counts.refused > 0, `both outcomes happened: ${JSON.stringify(counts)}`);
      },
    );

    it("a FIFO at a key reads as absent at once instead of hanging", async () => {
      const { root } = tree();
      const { execFileSync } = await import("node:child_process");
      execFileSync("mkfifo", [join(root, "in", "fifo")]);
      const s = make(root);
      const started = Date.now();
      assert.equal(await s.get("in/fifo"), undefined);
      assert.equal(await s.getRange("in/fifo", 0, 4), undefined);
      assert.equal(await s.getVersioned("in/fifo"), undefined);
      assert.equal(await s.size("in/fifo"), undefined);
      const p = s.pin("in/fifo");
      assert.equal(await p.getRange(0, 4), undefined);
      await p.close();
      assert.ok(Date.now() - started < 2000, "no read waited for a FIFO writer");
    });
  });
}

describe("ConfinedDir", () => {
  it("holds the key's directory and only the directories its walk changed, not one descriptor per level", () => {
    const root = roots.fresh();
    mkdirSync(join(root, "a", "b", "c", "d", "e"), { recursive: true });
    const open = () => readdirSync("/proc/self/fd").length;
    const before = open();
    const existing = ConfinedDir.open(root, "a/b/c/d/e/key", false, "test")!;
    assert.equal(open() - before, 1, "an existing path: the key's directory only");
    existing.close();
    // e/ exists; f/ and g/ are made: e (its entries changed), f and g are kept.
    const made = ConfinedDir.open(root, "a/b/c/d/e/f/g/key", true, "test")!;
    assert.equal(open() - before, 3);
    made.close();
    assert.equal(open(), before, "close releases every descriptor");
    assert.equal(ConfinedDir.open(root, "a/x/y/key", false, "test"), undefined);
    assert.equal(open(), before, "an absent path leaves nothing open");
  });
});

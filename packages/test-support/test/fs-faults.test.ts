import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { faultEvery, HEALABLE_FAULTS } from "../src/fault-proxy.js";
import { injectFsFaults } from "../src/fs-faults.js";
import { tempDir } from "../src/temp-dirs.js";

describe("fs faults", () => {
  it("fails the scripted I/O of the named file only, `times` times, and nothing once restored", async (t) => {
    const dir = tempDir("fs-faults", t);
    mkdirSync(join(dir, "d"));
    const [hit, miss] = [join(dir, "d", "hit"), join(dir, "miss")];
    writeFileSync(hit, "h");
    writeFileSync(miss, "m");
    const faults = await injectFsFaults();
    try {
      faults.script({ op: "read", code: "EIO", path: (p) => p === hit, times: 2 });
      const read = async (path: string) => {
        const file = await open(path);
        try {
          return (await file.readFile()).toString();
        } finally {
          await file.close();
        }
      };
      await assert.rejects(read(hit), (e: NodeJS.ErrnoException) => e.code === "EIO" && e.path === hit);
      assert.equal(await read(miss), "m");
      assert.equal(await faults.paused(() => read(hit)), "h", "paused: nothing injected");
      await assert.rejects(read(hit), { code: "EIO" });
      assert.equal(await read(hit), "h", "the fault is spent");
      faults.script({ op: "write", code: "EDQUOT", path: (p) => p === hit });
      // A path through /proc/self/fd/N/ (how FsStore names a file in a directory it holds open) is resolved.
      const dirFile = await open(join(dir, "d"));
      const viaFd = `/proc/self/fd/${dirFile.fd}/hit`;
      await assert.rejects(
        (async () => {
          const file = await open(viaFd, "w");
          try {
            await file.writeFile("x");
          } finally {
            await file.close();
          }
        })(),
        { code: "EDQUOT" },
      );
      await dirFile.close();
      assert.deepEqual(
        faults.fired.map((f) => `${f.op} ${f.code} ${f.path === hit}`),
        ["read EIO true", "read EIO true", "write EDQUOT true"],
      );
      faults.script({ op: "read", code: "EIO", path: (p) => p === hit });
    } finally {
      await faults.restore();
    }
    assert.equal((await readFile(hit)).toString(), "", "restored: the scripted fault no longer fires");
  });

  it("faultEvery: every n-th request gets a fault, the kinds in turn; a cut body falls on GETs only", () => {
    const rules = faultEvery(3, HEALABLE_FAULTS);
    const faultOf = (n: number, method = "GET") =>
      rules.find((r) => r.match({ method, path: "/", headers: {}, n }))?.fault.kind;
    assert.deepEqual(
      Array.from({ length: 20 }, (_, i) => faultOf(i + 1) ?? "-"),
      [
        "-",
        "-",
        "reset",
        "-",
        "-",
        "lose-ack",
        "-",
        "-",
        "status",
        "-",
        "-",
        "cut-body",
        "-",
        "-",
        "delay",
        "-",
        "-",
        "status",
        "-",
        "-",
      ],
    );
    assert.equal(faultOf(12, "PUT"), undefined);
  });
});

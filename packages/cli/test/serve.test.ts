import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { recordOf, SCHEMA } from "./recover-workload.js";

const BIN = fileURLToPath(new URL("../src/bin.js", import.meta.url));

it("zstream serve serves the viewer page and the store's committed objects on loopback", async () => {
  const dir = mkdtempSync(join(tmpdir(), "zs-serve-"));
  try {
    const w = await ZarrStreamWriter.create(new FsStore(dir), SCHEMA, { kind: "owner", nWriters: 1 });
    await w.writeRecord(0, recordOf(0));
    await w.close();
    const child = spawn(process.execPath, [BIN, "serve", dir], { stdio: ["ignore", "pipe", "pipe"] });
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const m = /viewer: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${out}`)));
    });
    try {
      const page = await fetch(url);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
      const manifest = await fetch(`${url}store/output_manifest.json`);
      assert.equal(((await manifest.json()) as { n_records: number }).n_records, 1);
      const part = await fetch(`${url}store/output_manifest.json`, { headers: { Range: "bytes=0-0" } });
      assert.equal(part.status, 206);
      assert.equal(await part.text(), "{");
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

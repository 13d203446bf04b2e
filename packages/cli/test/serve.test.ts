import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { recordOf, SCHEMA } from "./recover-workload.js";

const BIN = fileURLToPath(new URL("../src/bin.js", import.meta.url));

it("zstream serve serves the viewer page and the store's committed objects on loopback, to holders of the token unless --no-token", async () => {
  const dir = mkdtempSync(join(tmpdir(), "zs-serve-"));
  try {
    const w = await ZarrStreamWriter.create(new FsStore(dir), SCHEMA, { kind: "owner", nWriters: 1 });
    await w.writeRecord(0, recordOf(0));
    await w.close();
    for (const noToken of [false, true]) {
      const child = spawn(process.execPath, [BIN, "serve", dir, ...(noToken ? ["--no-token"] : [])], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let err = "";
      child.stderr.on("data", (d: Buffer) => {
        err += d.toString();
      });
      const [url, token] = await new Promise<[string, string | undefined]>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const m = /viewer: (http:\/\/127\.0\.0\.1:\d+\/)(\?token=([\w-]+))? /.exec(out);
          if (m) resolve([m[1]!, m[3]]);
        });
        child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${out}`)));
      });
      try {
        assert.equal(token === undefined, noToken, "the URL shown carries the token unless --no-token");
        const headers: Record<string, string> = token === undefined ? {} : { "X-Zstream-Token": token };
        const bare = await fetch(`${url}store/output_manifest.json`);
        await bare.arrayBuffer();
        assert.equal(bare.status, noToken ? 200 : 403, "without the token");
        if (noToken)
          assert.match(err, /WARNING: --no-token: every user and process on this machine can read/);
        else assert.equal(err, "");
        const page = await fetch(url, { headers });
        assert.equal(page.status, 200);
        assert.match(await page.text(), /<html/i);
        const manifest = await fetch(`${url}store/output_manifest.json`, { headers });
        assert.equal(((await manifest.json()) as { n_records: number }).n_records, 1);
        const part = await fetch(`${url}store/output_manifest.json`, {
          headers: { ...headers, Range: "bytes=0-0" },
        });
        assert.equal(part.status, 206);
        assert.equal(await part.text(), "{");
      } finally {
        child.kill("SIGTERM");
        await new Promise((r) => child.once("exit", r));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it("zstream demo --no-token without --serve is a usage error, before any demo runs", () => {
  const r = spawnSync(process.execPath, [BIN, "demo", "--no-token"], { encoding: "utf8" });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--no-token goes with --serve/);
});

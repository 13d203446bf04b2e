import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { s3ServerSkipReason } from "@zarr-stream/test-support/s3-server";

// S3Store on an https endpoint: the lean path (s3-lean.ts) sends its GETs and PUTs through node:https
// there, not on the plain-http socket path, and signs the host as the URL gives it. versitygw serves TLS
// with a certificate made here; the child process trusts it (https-child.ts).
describe("S3Store over https (versitygw with TLS)", { skip: s3ServerSkipReason("versitygw") }, () => {
  it("lean GETs and PUTs and the SDK's read what the other wrote, ranges and conditions included", async () => {
    const dir = mkdtempSync(join(tmpdir(), "zs-tls-"));
    try {
      const cert = join(dir, "cert.pem");
      const key = join(dir, "key.pem");
      execFileSync(
        "openssl",
        [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:prime256v1",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=127.0.0.1",
          "-addext",
          "subjectAltName=IP:127.0.0.1",
          "-keyout",
          key,
          "-out",
          cert,
        ],
        { stdio: "ignore" },
      );
      const child = fileURLToPath(new URL("./https-child.js", import.meta.url));
      const { stdout } = await promisify(execFile)(process.execPath, [child, cert, key], {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: cert },
        timeout: 120_000,
      });
      const seen = JSON.parse(stdout.trim().split("\n").at(-1)!);
      assert.match(seen.endpoint, /^https:\/\/127\.0\.0\.1:\d+$/);
      const all = {
        whole: true,
        ranged: true,
        suffix: true,
        created: true,
        refused: true,
        swapped: true,
        absentIsAbsent: true,
      };
      assert.deepEqual(seen.lean, all);
      assert.deepEqual(seen.sdk, all);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

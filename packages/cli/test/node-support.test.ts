import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { BIN } from "./helpers.js";

/*
 * Runs under the machine's Node and under each LTS release of scripts/node-lts.mjs. The AWS SDK warns
 * (NodeVersionSupportWarning, once per process) when the Node it runs on is older than the oldest its
 * coming releases support, 22 as of January 2027: on 22 and 24 an s3:// command prints no such warning,
 * while on Node 20, past its end of life, the SDK's notice is true and stays.
 */

const MAJOR = Number(process.versions.node.split(".")[0]);

test(`zstream inspect s3://… on Node ${process.versions.node}: ${MAJOR >= 22 ? "no" : "the SDK's"} NodeVersionSupportWarning`, async () => {
  let requests = 0;
  // An S3 endpoint with nothing in it: every request is a 404 NoSuchKey, so the command reads, finds no
  // store and exits without retries.
  const server = createServer((req, res) => {
    requests += 1;
    req.resume();
    res.writeHead(404, { "content-type": "application/xml" });
    res.end(
      '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>none</Message></Error>',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const child = spawn(process.execPath, [BIN, "inspect", "s3://zs-bucket/run"], {
      env: {
        ...process.env,
        FORCE_COLOR: "0",
        AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`,
        AWS_ACCESS_KEY_ID: "zs-test",
        AWS_SECRET_ACCESS_KEY: "zs-test",
        AWS_REGION: "us-east-1",
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "",
      },
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString("utf8");
    });
    const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.ok(requests >= 1, `the command reached the endpoint (exit ${status}): ${stderr}`);
    assert.notEqual(status, 0, "an empty bucket is no store");
    const warned = /NodeVersionSupportWarning/.test(stderr);
    assert.equal(warned, MAJOR < 22, `the SDK warns below Node 22, and only there: ${stderr}`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

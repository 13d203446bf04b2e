#!/usr/bin/env node
// Starts or stops a loopback S3 server (moto from the project's .venv, run by python/moto_server.py) for manual runs and CI
// jobs that want one shared server; the test suites start their own and need none of this.
//   node scripts/s3-server.mjs start [bucket]   prints `export AWS_...` lines (eval them) and leaves it running
//   node scripts/s3-server.mjs stop             stops the server this script started
// State (pid, endpoint) lives in .s3-server.json at the repository root.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const root = new URL("..", import.meta.url).pathname;
const moto = join(root, ".venv", "bin", "moto_server");
const stateFile = join(root, ".s3-server.json");
const [command, bucket = "zarr-stream"] = process.argv.slice(2);

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function start() {
  if (!existsSync(moto)) throw new Error(`${moto} is missing: run bash scripts/setup-python.sh`);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  // python/moto_server.py: moto with atomic conditional writes, as the test suites run it.
  const python = join(root, ".venv", "bin", "python");
  const script = join(root, "python", "moto_server.py");
  const child = spawn(python, [script, "-H", "127.0.0.1", "-p", String(port)], {
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`${endpoint}/moto-api/`).then(
      () => true,
      () => false,
    );
    if (ok) break;
    if (i === 199) throw new Error("python/moto_server.py did not answer within 20 s");
    await sleep(100);
  }
  // A bucket is a PUT on its name (path style); moto does not check signatures by default.
  const res = await fetch(`${endpoint}/${bucket}`, { method: "PUT" });
  if (!res.ok) throw new Error(`creating bucket ${bucket} failed: HTTP ${res.status}`);
  writeFileSync(stateFile, JSON.stringify({ pid: child.pid, endpoint, bucket }));
  console.log(`export AWS_ENDPOINT_URL_S3=${endpoint}`);
  console.log("export AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=zs-test AWS_SECRET_ACCESS_KEY=zs-test");
  console.log("export AWS_S3_FORCE_PATH_STYLE=true");
  console.log(`export ZS_S3_BUCKET=${bucket}`);
}

function stop() {
  if (!existsSync(stateFile)) return;
  const { pid } = JSON.parse(readFileSync(stateFile, "utf8"));
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    // already gone
  }
  rmSync(stateFile);
}

if (command === "start") await start();
else if (command === "stop") stop();
else {
  console.error("usage: node scripts/s3-server.mjs start [bucket] | stop");
  process.exit(2);
}

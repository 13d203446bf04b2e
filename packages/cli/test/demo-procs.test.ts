import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { BIN, tempDir, zstream } from "./helpers.js";

const DEMO = ["--grid", "12x18", "--records", "14", "--commit-every", "4"];

describe("zstream demo with writers as OS processes", () => {
  const root = tempDir("demo-procs");
  after(() => rmSync(root, { recursive: true, force: true }));

  it("demo --store DIR --procs 3: three writer processes, read back identical, verify OK", () => {
    const r = zstream("demo", "--store", join(root, "procs.zarr"), "--procs", "3", ...DEMO);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^records +14 committed by 3 writer processes/m);
    assert.match(r.stdout, /^read back +identical to what was written$/m);
    assert.match(r.stdout, /^verify +OK$/m);
    assert.match(r.stderr, /writer 0: round 4 committed: 14 records/);
  });

  it("demo: --procs without --store, or --store with two modes, is a usage error (exit 2)", () => {
    assert.match(zstream("demo", "--procs", "2").stderr, /--procs needs --store URL/);
    const r = zstream("demo", "--store", join(root, "x"), "--procs", "2", "--rank-from-env");
    assert.equal(r.status, 2);
    assert.match(r.stderr, /exactly one of --procs N, --rank I, --rank-from-env/);
  });
});

/** Why mpirun cannot run here, or undefined; under CI a missing Open MPI is a failure, never a skip. */
function mpirunSkipReason(): string | undefined {
  if (process.env.CI === "true") return undefined;
  return spawnSync("mpirun", ["--version"]).status === 0 ? undefined : "mpirun is missing (openmpi-bin)";
}

/** `mpirun -n 4 zstream demo --store URL --rank-from-env`; resolves with its exit code and output. */
function mpirunDemo(
  server: S3Server,
  url: string,
  env: Record<string, string>,
  onStderr?: (s: string) => void,
) {
  const all = { ...server.env, ...env };
  const proc = spawn(
    "mpirun",
    [
      "--allow-run-as-root",
      "--oversubscribe",
      "-n",
      "4",
      ...Object.keys(all).flatMap((k) => ["-x", k]),
      process.execPath,
      BIN,
      "demo",
      "--store",
      url,
      "--rank-from-env",
      ...DEMO,
    ],
    { env: { ...process.env, ...all }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
    onStderr?.(stderr);
  });
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on("exit", (code) => resolve({ code, stdout, stderr })),
  );
}

describe(
  "mpirun -n 4 zstream demo --rank-from-env over Versity's S3 gateway",
  {
    skip: mpirunSkipReason() ?? s3ServerSkipReason("versitygw"),
  },
  () => {
    let server: S3Server;
    after(() => server?.stop());

    it("demo: rank 2 SIGKILLed mid-round; the job started again resumes (RNG from its checkpoint) and reads back identical", async () => {
      server = await startS3Server("versitygw");
      const bucket = await server.makeBucket();
      const url = `s3://${bucket}/demo`;
      let killed = false;
      const first = await mpirunDemo(
        server,
        url,
        { ZSTREAM_DEMO_STOP_RANK: "2", ZSTREAM_DEMO_STOP_AFTER: "9" },
        (stderr) => {
          const paused = /writer 2: paused at record 9 \(pid (\d+)\)/.exec(stderr);
          if (paused && !killed) {
            killed = true;
            process.kill(Number(paused[1]), "SIGKILL");
          }
        },
      );
      assert.ok(killed, first.stderr);
      assert.notEqual(first.code, 0);

      const again = await mpirunDemo(server, url, {});
      assert.equal(again.code, 0, again.stderr);
      // A restarted contributor resumes at the committed state (its predecessor's posted tokens are stale:
      // fencing.md, "Sealed tokens"), which is a round boundary at or before its last posted round.
      assert.match(again.stderr, /writer 2: resume at record [048]\n/);
      assert.match(again.stdout, /^records +14 committed by 4 writer processes/m);
      assert.match(again.stdout, /^read back +identical to what was written$/m);
      assert.match(again.stdout, /^verify +OK$/m);
    });
  },
);

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { startCommand } from "./child-process.js";
import { CHILD, committedValues, dataObjects, differences, mpS3Fixture } from "./mp-s3-fixture.js";

/** Why mpirun cannot run here, or undefined; under CI a missing Open MPI is a failure, never a skip. */
function mpirunSkipReason(): string | undefined {
  if (process.env.CI === "true") return undefined;
  const probe = spawnSync("mpirun", ["--version"], { encoding: "utf8" });
  return probe.status === 0 ? undefined : "mpirun is missing: run scripts/setup-test-env.sh (openmpi-bin)";
}

/** `mpirun -n 4` of the workload: each rank takes its writer id and count from Open MPI's variables. */
function mpirun(url: string, server: { env: Record<string, string> }, env: Record<string, string> = {}) {
  const all = { ...server.env, ...env };
  const exported = Object.keys(all).flatMap((k) => ["-x", k]);
  return startCommand(
    "mpirun",
    ["--allow-run-as-root", "--oversubscribe", "-n", "4", ...exported, process.execPath, CHILD, url],
    all,
  );
}

describe("mpirun -n 4 over Versity's S3 gateway", { skip: mpirunSkipReason() }, () => {
  const fx = mpS3Fixture("mpirun", "versitygw");

  it(
    "mpirun: 4 ranks write one store through the run API, equal to a single writer bitwise",
    { skip: fx.skip },
    async () => {
      const started = Date.now();
      const job = mpirun(`s3://${fx.bucket}/mpi`, fx.server);
      const { code, stderr } = await job.exited;
      assert.equal(code, 0, `${job.lines.join("\n")}\n${stderr}`);
      for (const id of [0, 1, 2, 3]) assert.ok(job.lines.includes(`done ${id}`), job.lines.join("\n"));
      assert.ok(job.lines.includes("committed 10 50"), job.lines.join("\n"));
      console.log(`# mpirun -n 4 on versitygw: ${Date.now() - started} ms`);
      const s3 = fx.server.store({ prefix: "mpi" });
      assert.deepEqual(await s3.list("_tokens/"), []);
      assert.equal(await committedValues(s3), await committedValues(fx.reference));
      assert.deepEqual(differences(await dataObjects(s3), await dataObjects(fx.reference)), []);
    },
  );

  it(
    "mpirun: rank 2 SIGKILLed mid-round ends the job; the job started again resumes every rank and ends equal bitwise",
    { skip: fx.skip },
    async () => {
      const url = `s3://${fx.bucket}/mpi-killed`;
      const first = mpirun(url, fx.server, { ZS_PAUSE_AFTER: "2:17" });
      const paused = await first.waitFor(/^paused 2 17 pid (\d+)$/);
      process.kill(Number(paused[1]), "SIGKILL");
      const ended = await first.exited;
      assert.notEqual(ended.code, 0, "mpirun reports the killed rank");
      const s3 = fx.server.store({ prefix: "mpi-killed" });
      const manifestBefore = await committedValues(s3);

      const again = mpirun(url, fx.server);
      const { code, stderr } = await again.exited;
      assert.equal(code, 0, `${again.lines.join("\n")}\n${stderr}`);
      // Every rank resumes (none starts over) at a round boundary, after the rounds holding its own posted
      // tokens (a contributor may have posted all of them and ended before the kill); rank 2 no later than
      // its last complete round (records 10-14).
      for (const id of [0, 1, 2, 3]) {
        const line = again.lines.find((l) => l.startsWith(`opened ${id} `)) ?? "";
        const opened = /^opened \d+ resume (\d+)$/.exec(line);
        assert.ok(opened !== null, again.lines.join("\n"));
        const next = Number(opened[1]);
        assert.ok(next % 5 === 0 && (id !== 2 || next <= 15), `rank ${id} resumed at ${next}`);
        assert.ok(again.lines.includes(`done ${id}`));
      }
      assert.notEqual(manifestBefore, await committedValues(s3));
      assert.deepEqual(await s3.list("_tokens/"), []);
      assert.equal(await committedValues(s3), await committedValues(fx.reference));
      assert.deepEqual(differences(await dataObjects(s3), await dataObjects(fx.reference)), []);
    },
  );

  it(
    "mpirun: the same job started twice at once, again and again: one job finishes, the other fails with a named error, the store equals the formula bitwise",
    { skip: fx.skip },
    async () => {
      const tries = Number(process.env.ZS_TWICE_TRIES ?? 20);
      for (let i = 0; i < tries; i++) {
        const prefix = `twice-${i}`;
        const jobs = [0, 1].map(() => mpirun(`s3://${fx.bucket}/${prefix}`, fx.server));
        const ended = await Promise.all(jobs.map((j) => j.exited));
        const report = ended.map(
          (e, j) => `job ${j}: exit ${e.code}\n${jobs[j]!.lines.join("\n")}\n${e.stderr}`,
        );
        const finished = ended.filter((e) => e.code === 0);
        assert.equal(finished.length, 1, `try ${i}: ${finished.length} jobs finished\n${report.join("\n")}`);
        const failed = ended.find((e) => e.code !== 0)!;
        assert.match(
          failed.stderr,
          /\b(Fenced|CommitError|ProtocolError)\b/,
          `try ${i}: the duplicate fails with a named error\n${report.join("\n")}`,
        );
        const s3 = fx.server.store({ prefix });
        assert.equal(
          await committedValues(s3),
          await committedValues(fx.reference),
          `try ${i}: committed values`,
        );
        assert.deepEqual(differences(await dataObjects(s3), await dataObjects(fx.reference)), [], `try ${i}`);
      }
    },
  );
});

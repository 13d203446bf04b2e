import { spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readBlob, readOutputManifest } from "@zarr-stream/reader";
import { ZarrStreamError } from "@zarr-stream/spec";
import { openStore } from "@zarr-stream/store";
import { runRank, StreamRun } from "@zarr-stream/writer";
import type { CliIo } from "../io.js";
import { plotStore } from "../plot/plot.js";
import { verifyStore } from "../verify.js";
import { landMask, Rng, recordTime, temperature } from "./field.js";
import { RNG_BLOB, rngSeed } from "./messages.js";
import { type DemoConfig, demoSchema, splitGrid } from "./plan.js";
import { readBack } from "./readback.js";

export type RankDemoConfig = Omit<DemoConfig, "out"> & {
  /** Any store URL: a path, file://, s3://bucket/prefix. */
  store: string;
  /** This process's writer id; undefined: from the launcher's environment (count: `writers` if it has none). */
  rank?: number;
};

export interface RankDemoSummary {
  store: string;
  writer: number;
  writers: number;
  resumed_at: number;
  records: number;
  /** Writer 0 only: the read-back, verify and quicklook of the whole store once every round is committed. */
  readback_ok?: boolean;
  mismatches?: string[];
  verify_ok?: boolean;
  quicklook?: string;
}

/**
 * One writer of the demo as its own OS process (started by a launcher, or by `--procs`): it streams its
 * region through the run API, so a restarted process goes on from the committed state with the RNG it
 * checkpointed; writer 0 then reads the whole store back, verifies it and draws the quicklook.
 */
export async function runDemoRank(cfg: RankDemoConfig, io: CliIo): Promise<RankDemoSummary> {
  const env = process.env;
  // A launcher's size wins over --writers; a Kubernetes Indexed Job has none, so --writers gives it.
  const { id, count } = runRank(
    cfg.rank !== undefined || !hasLauncherCount(env) ? { id: cfg.rank, count: cfg.writers } : {},
    env,
  );
  const rank = { id };
  const split = splitGrid(cfg.grid, count);
  const full: DemoConfig = { ...cfg, writers: count, out: cfg.store };
  const region = split.regions[rank.id]!;
  const say = (line: string) => io.stderr.write(`writer ${rank.id}: ${line}\n`);
  const run = await StreamRun.open({
    store: cfg.store,
    id: rank.id,
    count,
    region,
    // Commits on demand: each carries the RNG blob written after its last record.
    commitEvery: 0,
    ...(rank.id === 0 ? { schema: demoSchema(full, split) } : {}),
    // Asked for, every rank checks the store is paged; left out, a restarted rank keeps the store's form.
    ...(cfg.manifestPages ? { manifestPages: true } : {}),
    onEvent: (e) => {
      if (e.kind === "opened") say(`${e.mode} at record ${e.nextRecord}`);
      if (e.kind === "waiting") say(`round ${e.round}: waiting for writer(s) ${e.missing.join(", ")}`);
      if (e.kind === "committed") say(`round ${e.round} committed: ${e.nCommitted} records`);
    },
  });
  const resumedAt = run.nextRecord;
  const rng =
    resumedAt === 0 ? new Rng(rngSeed(rank.id)) : await checkpointedRng(cfg.store, rank.id, resumedAt);
  if (resumedAt === 0) await run.writeStatic("land_mask", landMask(cfg.grid, region));
  for (let r = resumedAt; r < cfg.records; r++) {
    await run.write(recordTime(r), { temperature: temperature(recordTime(r), cfg.grid, region, rng) });
    // The RNG state a restart needs, checkpointed with the last record of every commit.
    if ((r + 1) % cfg.commitEvery === 0 || r === cfg.records - 1) {
      await run.writeBlob({ record: r }, RNG_BLOB, rng.stateBytes());
      await run.commit();
    }
    if (
      r === Number(env.ZSTREAM_DEMO_STOP_AFTER ?? -1) &&
      rank.id === Number(env.ZSTREAM_DEMO_STOP_RANK ?? -1)
    ) {
      // Test hook: stand still mid-round so a test can kill this process.
      io.stderr.write(`writer ${rank.id}: paused at record ${r} (pid ${process.pid})\n`);
      await new Promise(() => setInterval(() => {}, 1 << 30));
    }
  }
  await run.close();
  const summary: RankDemoSummary = {
    store: cfg.store,
    writer: rank.id,
    writers: count,
    resumed_at: resumedAt,
    records: cfg.records,
  };
  if (rank.id !== 0) return summary;

  const store = openStore(cfg.store);
  const back = await readBack(store, cfg.grid, split, cfg.records, cfg.commitEvery);
  const verified = await verifyStore(store);
  const quicklook = join(await mkdtemp(join(tmpdir(), "zstream-demo-")), "temperature.png");
  await writeFile(
    quicklook,
    (await plotStore(store, { variable: "temperature", record: cfg.records - 1 })).png,
  );
  return {
    ...summary,
    records: back.records,
    readback_ok: back.mismatches.length === 0,
    mismatches: back.mismatches,
    verify_ok: verified.ok,
    quicklook,
  };
}

function hasLauncherCount(env: NodeJS.ProcessEnv): boolean {
  return ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_ARRAY_TASK_COUNT", "SLURM_NTASKS"].some(
    (k) => env[k] !== undefined,
  );
}

/** The RNG state writer `id` checkpointed with the last committed record. */
async function checkpointedRng(url: string, id: number, next: number): Promise<Rng> {
  const store = openStore(url);
  const manifest = await readOutputManifest(store);
  return Rng.fromState(await readBlob(store, { record: next - 1 }, id, RNG_BLOB, { manifest }));
}

/**
 * `--procs N`: the demo's writers as N OS processes of this command, each one rank; stderr passes
 * through, writer 0's stdout (the summary) is returned.
 */
export async function runDemoProcs(args: string[], procs: number, io: CliIo): Promise<number> {
  const bin = process.argv[1];
  if (bin === undefined) throw new ZarrStreamError("cannot tell which script to start for --procs");
  const children = Array.from({ length: procs }, (_, id) => {
    const child = spawn(
      process.execPath,
      [bin, "demo", ...args, "--rank", String(id), "--writers", String(procs)],
      {
        stdio: ["ignore", id === 0 ? "pipe" : "ignore", "inherit"],
      },
    );
    if (id === 0) child.stdout?.on("data", (d: Buffer) => io.stdout.write(d));
    return new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? 1)));
  });
  const codes = await Promise.all(children);
  return codes.find((c) => c !== 0) ?? 0;
}

import { parentPort, workerData } from "node:worker_threads";
import type { CommitToken } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { landMask, Rng, recordTime, temperature } from "./field.js";
import { batches, RNG_BLOB, rngSeed, type ToMain, type ToWriter, type WriterJob } from "./messages.js";

/**
 * One demo writer on its own thread, as one rank of a domain-decomposed model would be: it owns a
 * region, streams records into it, and hands a token per commit interval to the owner (writer 0).
 */
const job = workerData as WriterJob;
const port = parentPort!;
const post = (m: ToMain) => port.postMessage(m);

const pendingTokens = new Map<number, CommitToken[]>();
const waiters = new Map<number, (t: CommitToken[]) => void>();
port.on("message", (m: ToWriter) => {
  if (m.type !== "tokens") return;
  const w = waiters.get(m.batch);
  if (w) {
    waiters.delete(m.batch);
    w(m.tokens);
  } else pendingTokens.set(m.batch, m.tokens);
});

function tokensFor(batch: number): Promise<CommitToken[]> {
  const ready = pendingTokens.get(batch);
  if (ready) {
    pendingTokens.delete(batch);
    return Promise.resolve(ready);
  }
  return new Promise((resolve) => waiters.set(batch, resolve));
}

async function run(): Promise<void> {
  const store = new FsStore(job.storeDir);
  const isOwner = job.role.kind !== "contributor";
  const w = isOwner
    ? await ZarrStreamWriter.create(store, job.schema!, job.role, job.region, {
        manifestPages: job.manifestPages === true,
      })
    : await ZarrStreamWriter.join(store, job.role, job.region);
  post({ type: "ready", writer: job.writer });
  const rng = new Rng(rngSeed(job.writer));
  await w.writeStatic("land_mask", landMask(job.grid, job.region));
  const all = batches(job.records, job.commitEvery);
  for (const [b, [start, stop]] of all.entries()) {
    for (let r = start; r < stop; r++) {
      await w.writeRecord(recordTime(r), {
        temperature: temperature(recordTime(r), job.grid, job.region, rng),
      });
      post({ type: "record", writer: job.writer });
    }
    // the RNG state a restart would need, checkpointed with the records it follows
    await w.writeBlob({ record: stop - 1 }, RNG_BLOB, rng.stateBytes());
    const last = b === all.length - 1;
    if (!isOwner) {
      post({ type: "token", writer: job.writer, batch: b, token: await w.flush() });
      continue;
    }
    const others = job.role.kind === "owner" && job.role.nWriters > 1 ? await tokensFor(b) : [];
    if (last) {
      const m = await w.close(others);
      post({
        type: "committed",
        batch: b,
        commit_seq: (m as { commit_seq?: number }).commit_seq ?? 0,
        n_committed: m?.n_records ?? 0,
      });
    } else {
      const receipt = await w.commit([await w.flush(), ...others]);
      post({ type: "committed", batch: b, commit_seq: receipt.commit_seq, n_committed: receipt.n_committed });
    }
  }
  if (!isOwner) await w.close();
  post({ type: "done", writer: job.writer });
}

run().catch((e: unknown) => {
  const err = e instanceof Error ? e : new Error(String(e));
  post({
    type: "error",
    writer: job.writer,
    name: err.name,
    message: err.message,
    ...(err.stack ? { stack: err.stack } : {}),
  });
});

// One OS process of the multi-process runs: writer <id> of MP_WRITERS, as any launcher would start it
// (shell loop, mpirun, a Kubernetes indexed Job with JOB_COMPLETION_INDEX). It shares nothing with the
// others but the store URL; tokens travel through the store mailbox.
//   node mailbox-child.js <store-url> <id> <create|join|resume>
// Env: ZS_PAUSE_AFTER=<record> stops after writing that record (the test then SIGKILLs it);
//      ZS_COLLECT_TIMEOUT_MS bounds each of the owner's waits (it reports and waits again).
import { readOutputManifest } from "@zarr-stream/reader";
import { openStore } from "@zarr-stream/store";
import {
  clearRound,
  collectTokens,
  MailboxTimeout,
  mailboxKey,
  postToken,
  ZarrStreamWriter,
} from "../src/index.js";
import { recordArrays } from "./helpers.js";
import { MP_COMMIT_EVERY, MP_RECORDS, MP_REGIONS, MP_SCHEMA, MP_WRITERS, mpT } from "./mp-workload.js";

const [url, idText, mode] = process.argv.slice(2);
const id = Number(idText);
if (
  url === undefined ||
  !(id >= 0 && id < MP_WRITERS) ||
  !["create", "join", "resume"].includes(mode ?? "")
) {
  throw new Error("usage: mailbox-child <store-url> <id> <create|join|resume>");
}
const say = (line: string) => process.stdout.write(`${line}\n`);
const store = openStore(url);
const region = MP_REGIONS[id]!;
const role =
  id === 0 ? ({ kind: "owner", nWriters: MP_WRITERS } as const) : ({ kind: "contributor", id } as const);
const pauseAfter = process.env.ZS_PAUSE_AFTER === undefined ? undefined : Number(process.env.ZS_PAUSE_AFTER);
const timeoutMs = Number(process.env.ZS_COLLECT_TIMEOUT_MS ?? 30_000);

const commitSeq = async () => ((await readOutputManifest(store)) as { commit_seq: number }).commit_seq;
const open = () =>
  mode === "create"
    ? ZarrStreamWriter.create(store, MP_SCHEMA, role, region)
    : mode === "join"
      ? ZarrStreamWriter.join(store, role, region)
      : ZarrStreamWriter.resume(store, role, region);

let w = await open();
// Resume rule: a token already posted for the open round holds this writer's records of that round; they
// become committed when the owner commits it, so wait for that before picking up from the manifest.
if (mode === "resume") {
  const seq = await commitSeq();
  if ((await store.size(mailboxKey(seq + 1, id))) !== undefined) {
    while ((await commitSeq()) === seq) await new Promise((r) => setTimeout(r, 100));
    w = await open();
  }
}
// Round rule: the k-th flush since open goes to round c0 + k, c0 being the commit_seq read at open.
const c0 = (w.lastManifest as { commit_seq: number }).commit_seq;
let flushes = 0;
say(`ready ${c0}`);

for (let r = w.committedCount; r < MP_RECORDS; r++) {
  await w.writeRecord(
    mpT(r),
    recordArrays(MP_SCHEMA, r, region, (_, p) => p || w.isOwner),
  );
  if (r === pauseAfter) {
    say(`paused ${r}`);
    setInterval(() => {}, 1 << 30);
    await new Promise(() => {});
  }
  if ((r + 1) % MP_COMMIT_EVERY !== 0) continue;
  const round = c0 + ++flushes;
  await postToken(store, round, await w.flush());
  if (!w.isOwner) continue;
  for (;;) {
    try {
      const receipt = await w.commit(
        await collectTokens(store, round, MP_WRITERS, { timeoutMs, pollMs: 50 }),
      );
      await clearRound(store, round);
      say(`committed ${receipt.commit_seq} ${receipt.n_committed}`);
      break;
    } catch (err) {
      if (!(err instanceof MailboxTimeout)) throw err;
      say(`timeout ${err.round} ${err.missing.join(",")}`);
    }
  }
}
if (!w.isOwner) await w.close();
(store as { close?: () => Promise<void> }).close?.();
say("done");

// One OS process of the multi-process runs: the workload only; StreamRun does the token exchange and
// restarts. Started by the tests (id and count given) or by a launcher (mpirun: both from its environment).
//   node mp-child.js <store-url> [<id> <count>]
// Env: ZS_PAUSE_AFTER=<id>:<record> makes writer <id> stop after writing that record (the test then
// SIGKILLs it); ZS_REPORT_MS is how often the owner reports a wait.
import { runRank, StreamRun } from "../src/index.js";
import { recordArrays } from "./helpers.js";
import { MP_COMMIT_EVERY, MP_RECORDS, MP_SCHEMA, mpRegions, mpT } from "./mp-workload.js";

const [url, idText, countText] = process.argv.slice(2);
if (url === undefined) throw new Error("usage: mp-child <store-url> [<id> <count>]");
const rank = runRank(idText === undefined ? {} : { id: Number(idText), count: Number(countText) });
const region = mpRegions(rank.count)[rank.id]!;
const [pauseId, pauseAt] = (process.env.ZS_PAUSE_AFTER ?? "-1:-1").split(":").map(Number);
const say = (line: string) => process.stdout.write(`${line}\n`);

const run = await StreamRun.open({
  store: url,
  ...rank,
  region,
  schema: MP_SCHEMA,
  commitEvery: MP_COMMIT_EVERY,
  reportEveryMs: Number(process.env.ZS_REPORT_MS ?? 5000),
  pollMs: 50,
  onEvent: (e) => {
    if (e.kind === "opened") say(`opened ${e.id} ${e.mode} ${e.nextRecord}`);
    if (e.kind === "waiting") say(`waiting ${e.round} ${e.missing.join(",")}`);
    if (e.kind === "committed") say(`committed ${e.round} ${e.nCommitted}`);
  },
});
for (let r = run.nextRecord; r < MP_RECORDS; r++) {
  await run.write(
    mpT(r),
    recordArrays(MP_SCHEMA, r, region, (_, partitioned) => partitioned || run.isOwner),
  );
  if (rank.id === pauseId && r === pauseAt) {
    say(`paused ${rank.id} ${r} pid ${process.pid}`);
    setInterval(() => {}, 1 << 30);
    await new Promise(() => {});
  }
}
await run.close();
say(`done ${rank.id}`);

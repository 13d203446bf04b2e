// Child process of the recover test: `create` runs the whole workload slowly; `resume` only tries to
// open the store as its owner. Prints what happened on stdout; errors go to stderr with exit code 3.
import { setTimeout as sleep } from "node:timers/promises";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { COMMIT_EVERY, N_RECORDS, options, recordOf, SCHEMA } from "./recover-workload.js";

const [dir, mode, id] = process.argv.slice(2) as [string, "create" | "resume", string];
const store = new FsStore(dir);
try {
  const w =
    mode === "create"
      ? await ZarrStreamWriter.create(store, SCHEMA, { kind: "owner", nWriters: 1 }, {}, options(id))
      : await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 }, {}, undefined, options(id));
  process.stdout.write("opened\n");
  for (let r = 0; r < N_RECORDS; r++) {
    await w.writeRecord(r, recordOf(r));
    if ((r + 1) % COMMIT_EVERY === 0) {
      const receipt = await w.commit([await w.flush()]);
      process.stdout.write(`committed ${receipt.n_committed}\n`);
      // The test kills the run here; waiting for that keeps it from finishing first on a busy machine.
      if (receipt.n_committed === 12 && mode === "create") await sleep(60_000);
    }
    await sleep(40);
  }
  await w.close();
  process.stdout.write("done\n");
} catch (err) {
  process.stderr.write(`${(err as Error).name}: ${(err as Error).message}\n`);
  process.exit(3);
}

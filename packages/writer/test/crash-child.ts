// Child process of the crash test: writes the crash workload to an FsStore until it is killed.
import { FsStore } from "@zarr-stream/store";
import { openWriters, runFrom } from "./crash-workload.js";

const store = new FsStore(process.argv[2]!);
const writers = await openWriters(store, "create");
process.stdout.write("created\n");
await runFrom(writers, 0, (n) => process.stdout.write(`committed ${n}\n`));
process.stdout.write("done\n");

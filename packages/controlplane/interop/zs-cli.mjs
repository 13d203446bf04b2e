import { runControlPlaneCli } from "@zarr-stream/controlplane";

const io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };
const code = await runControlPlaneCli(process.argv.slice(2), io);
process.exitCode = code;

import { ControlPlane } from "@zarr-stream/controlplane";
import { FsStore } from "@zarr-stream/store";

const [dir, product] = process.argv.slice(2);
const cp = await ControlPlane.open(new FsStore(dir), {
  product,
  runHeartbeatIntervalS: 0,
  claimHeartbeatIntervalS: 0,
});
const viaSnap = await cp.project();
const full = await cp.replay();
const same = JSON.stringify([...viaSnap.state].sort()) === JSON.stringify([...full].sort());
console.log(
  JSON.stringify({
    source: viaSnap.source,
    generation: viaSnap.generation,
    fallback: viaSnap.fallbackReason,
    records: viaSnap.state.size,
    replayRecords: full.size,
    same,
  }),
);
console.log(
  JSON.stringify((await cp.listRuns()).map((r) => [r.runId, r.state, r.events.length, r.tornTail ?? null])),
);
console.log(JSON.stringify(await cp.snapshotStatus()).slice(0, 300));

// Rough timings on an FsStore: 20 runs x 500 records, full replay, snapshot rebuild and read, claims.
// Run after `npx tsc -b packages/controlplane`: node packages/controlplane/bench/wal-bench.mjs
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ControlPlane } from "@zarr-stream/controlplane";
import { FsStore } from "@zarr-stream/store";

const dir = mkdtempSync(join(tmpdir(), "cp-bench-"));
const cp = await ControlPlane.open(new FsStore(dir), {
  product: "bench",
  runHeartbeatIntervalS: 0,
  claimHeartbeatIntervalS: 0,
});
const RUNS = 20;
const PER = 500;
const ms = (t) => Math.round(performance.now() - t);
let t = performance.now();
for (let r = 0; r < RUNS; r++) {
  const id = await cp.startRun({ runId: `r${r}` });
  for (let i = 0; i < PER; i++)
    await cp.appendRecord(id, { key: `span_${i % 700}`, type: "span", status: "active", r });
  await cp.completeRun(id);
}
const writeMs = ms(t);
t = performance.now();
const full = await cp.replay();
const replayMs = ms(t);
t = performance.now();
await cp.rebuildSnapshot();
const rebuildMs = ms(t);
const late = await cp.startRun({ runId: "late" });
await cp.appendRecord(late, { key: "x", status: "active" });
await cp.completeRun(late);
t = performance.now();
const viaSnapshot = await cp.project();
const snapshotReadMs = ms(t);
t = performance.now();
for (let i = 0; i < 200; i++) await cp.acquireClaim(`c:${i}`);
for (let i = 0; i < 200; i++) await cp.releaseClaim(`c:${i}`);
const claimOpMs = (performance.now() - t) / 400;
const events = RUNS * (PER + 2);
console.log(
  JSON.stringify({
    events,
    writeMs,
    perEventUs: Math.round((writeMs * 1000) / events),
    replayMs,
    records: full.size,
    rebuildMs,
    snapshotReadMs,
    source: viaSnapshot.source,
    claimOpMs: Number(claimOpMs.toFixed(2)),
  }),
);
rmSync(dir, { recursive: true, force: true });

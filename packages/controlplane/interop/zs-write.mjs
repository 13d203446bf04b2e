import { ControlPlane } from "@zarr-stream/controlplane";
import { FsStore } from "@zarr-stream/store";

const [dir, product] = process.argv.slice(2);
const store = new FsStore(dir);
const cp = await ControlPlane.open(store, {
  product,
  runHeartbeatIntervalS: 0,
  claimHeartbeatIntervalS: 0,
  ownerId: "zs-writer",
});
const r1 = await cp.startRun({ runId: "zs-run-1" });
const index = {
  groups: { data: { kind: "integer", params: {}, size: 12 } },
  name: "integer_only_v1",
  schema_version: "v1",
};
await cp.ensureResolvedIndex({ index }, { runId: r1 });
for (let i = 0; i < 30; i++) {
  await cp.appendRecord(r1, {
    key: `span_${r1}_${i}_data`,
    type: "span",
    size: 0,
    timestamp: Date.now() / 1000,
    status: "active",
    meta: { group: "data", batch_id: `${i}`, run_id: r1 },
    span: {
      arrays: ["x"],
      time_index_ranges: [[i, i]],
      timestamps_written: 1,
      aligned: true,
      state_array: null,
      state_deleted_value: 2,
    },
    schema_version: "v2",
  });
}
await cp.completeRun(r1);
const r2 = await cp.startRun({ runId: "zs-run-2", replaces: [r1] });
await cp.appendEvent(r2, "replacement_committed", {
  replacing_run_id: r2,
  replaced_span_keys: [`span_${r1}_0_data`],
});
await cp.completeRun(r2);
const r3 = await cp.startRun({ runId: "zs-run-3-failed" });
await cp.failRun(r3, "boom");
await cp.startRun({ runId: "zs-run-4-live" }); // left live on purpose
await cp.acquireClaim("zarr_append:data");
await cp.close();
console.log("wrote", dir);

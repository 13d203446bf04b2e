import {
  type ArrayLayout,
  arrayZarrJson,
  encodeShard,
  encodeZarrJson,
  groupZarrJson,
  shardKey,
} from "@zarr-stream/shard";
import type { StreamSchema } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { ArrayPlan } from "./array-plan.js";
import { runLimited } from "./limit.js";

export function zarrJsonKey(arrayPath: string): string {
  return `${arrayPath}/zarr.json`;
}

/** The layout with the time axis set to `timeLength` (arrays without a time axis are unchanged). */
export function withTimeLength(plan: ArrayPlan, timeLength: number): ArrayLayout {
  if (plan.timeAxis < 0) return plan.layout;
  const shape = [...plan.layout.shape];
  shape[plan.timeAxis] = timeLength;
  return { ...plan.layout, shape };
}

/** Writes the zarr.json of every array with a time axis at the new committed time length. */
export async function writeTimeShapes(store: Store, plans: ArrayPlan[], timeLength: number): Promise<void> {
  await runLimited(
    plans
      .filter((p) => p.timeAxis >= 0)
      .map((p) => async () => {
        p.layout = withTimeLength(p, timeLength);
        await store.put(zarrJsonKey(p.name), encodeZarrJson(arrayZarrJson(p.layout)));
      }),
  );
}

/** Writes a whole 1-D float64 coordinate (non-time coords, and the indexed time axis) shard by shard. */
async function writeCoordinate(store: Store, plan: ArrayPlan, values: number[]): Promise<void> {
  const { layout } = plan;
  const s = layout.shardShape[0]!;
  const nShards = Math.ceil(values.length / s);
  await runLimited(
    Array.from({ length: nShards }, (_, i) => async () => {
      const data = new Float64Array(s);
      data.set(values.slice(i * s, Math.min((i + 1) * s, values.length)));
      await store.put(shardKey(plan.name, [i]), await encodeShard(layout, [i], data));
    }),
  );
}

/**
 * Seed §5.1 create: every array's zarr.json (statics at full shape, streaming arrays at the initial time
 * length), the coordinate data, then the group. The manifest, when one is due, is the caller's last write.
 */
export async function writeStoreLayout(
  store: Store,
  schema: StreamSchema,
  plans: ArrayPlan[],
): Promise<void> {
  await runLimited(
    plans.map((p) => async () => store.put(zarrJsonKey(p.name), encodeZarrJson(arrayZarrJson(p.layout)))),
  );
  for (const plan of plans) {
    if (plan.kind === "coord") await writeCoordinate(store, plan, schema.coords![plan.name]!.values!);
    if (plan.kind === "time" && schema.time_mode !== "append")
      await writeCoordinate(store, plan, schema.time_mode.indexed.times);
  }
  await store.put("zarr.json", encodeZarrJson(groupZarrJson({ ...(schema.attrs ?? {}) })));
}

import { allocTyped, copyStrided, encodeShard } from "@zarr-stream/shard";
import type { TypedArray } from "@zarr-stream/spec";
import type { ArrayPlan } from "./array-plan.js";

/** Seed §7 write_static: shard `idx` of a static, cut from the supplied (region- or full-shaped) array. */
export async function encodeStaticShard(
  plan: ArrayPlan,
  array: TypedArray,
  idx: number[],
): Promise<Uint8Array> {
  const { layout } = plan;
  const buf = allocTyped(
    plan.dtype,
    layout.shardShape.reduce((p, n) => p * n, 1),
  );
  const lo = idx.map((i, d) => i * layout.shardShape[d]!);
  const count = idx.map((_, d) => Math.min(lo[d]! + layout.shardShape[d]!, layout.shape[d]!) - lo[d]!);
  copyStrided(
    array,
    plan.suppliedFullShape,
    lo.map((x, d) => x - plan.suppliedStart[d]!),
    buf,
    layout.shardShape,
    lo.map(() => 0),
    count,
  );
  return encodeShard(layout, idx, buf);
}

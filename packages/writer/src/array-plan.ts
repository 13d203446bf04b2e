import { type CodecSpec, profileCodec } from "@zarr-stream/codecs";
import type { ArrayLayout } from "@zarr-stream/shard";
import {
  type Attrs,
  isPartitioned,
  ownedShardRanges,
  type Region,
  type StreamDType,
  type StreamSchema,
  writesShardsOf,
} from "@zarr-stream/spec";

/** What one writer does with one array of the store. */
export interface ArrayPlan {
  name: string;
  kind: "var" | "static" | "time" | "coord";
  dims: string[];
  dtype: StreamDType;
  /** Position of the time dim in `dims`, or -1 (statics, non-time coords). */
  timeAxis: number;
  partitioned: boolean;
  /** This writer supplies the array (write_record arrays or write_static). */
  supplies: boolean;
  /** This writer PUTs the array's shard objects (exactly one writer per shard object, seed §4). */
  writesShards: boolean;
  /** Shape the caller supplies: dims minus time, region dims cut to the region. */
  suppliedShape: number[];
  /** suppliedShape at full rank, 1 on the time axis: how a record array is seen when copied into a shard. */
  suppliedFullShape: number[];
  /** Start of the supplied box in array coordinates, per dim (0 on the time axis). */
  suppliedStart: number[];
  /** Non-time shard indices this writer writes, each full rank with 0 on the time axis. */
  ownedShards: number[][];
  /** Layout with the committed shape (time length = committed records in append mode). */
  layout: ArrayLayout;
}

export interface PlanContext {
  schema: StreamSchema;
  /** Every non-time dim with its [start, stop) for this writer. */
  region: Region;
  /** Dims the writer's region names (its region dims, seed §4). */
  regionDims: string[];
  isOwner: boolean;
  /** Current length of the time axis. */
  timeLength: number;
}

function dimLength(schema: StreamSchema, dim: string, timeLength: number): number {
  if (dim === schema.time_dim) return timeLength;
  const entry = schema.dims.find(([d]) => d === dim);
  return entry![1];
}

function cartesian(ranges: [number, number][]): number[][] {
  let out: number[][] = [[]];
  for (const [a, b] of ranges) {
    const next: number[][] = [];
    for (const prefix of out) for (let i = a; i < b; i++) next.push([...prefix, i]);
    out = next;
  }
  return out;
}

export function layoutFor(
  schema: StreamSchema,
  dims: string[],
  dtype: StreamDType,
  attrs: Attrs | undefined,
  timeLength: number,
): ArrayLayout {
  const codec: CodecSpec = profileCodec(schema.profile, dtype);
  return {
    shape: dims.map((d) => dimLength(schema, d, timeLength)),
    shardShape: dims.map((d) => schema.shard_shape[d]!),
    chunkShape: dims.map((d) => schema.chunk_shape[d]!),
    dtype,
    codec,
    dimensionNames: [...dims],
    attributes: { ...(attrs ?? {}) },
  };
}

function planArray(
  ctx: PlanContext,
  name: string,
  kind: ArrayPlan["kind"],
  dims: string[],
  dtype: StreamDType,
  attrs: Attrs | undefined,
): ArrayPlan {
  const { schema, region, regionDims, isOwner } = ctx;
  const timeAxis = dims.indexOf(schema.time_dim);
  const partitioned = (kind === "var" || kind === "static") && isPartitioned(dims, regionDims);
  const supplies = partitioned || isOwner;
  const writesShards = partitioned ? writesShardsOf(dims, region, regionDims, isOwner) : isOwner;
  const ranges = ownedShardRanges(dims, region, schema.shard_shape, schema.dims, schema.time_dim);
  const ownedShards = writesShards
    ? cartesian(dims.map((d) => (d === schema.time_dim ? [0, 1] : ranges[d]!)))
    : [];
  const box = dims.map((d) => (d === schema.time_dim ? ([0, 1] as [number, number]) : region[d]!));
  return {
    name,
    kind,
    dims,
    dtype,
    timeAxis,
    partitioned,
    supplies,
    writesShards,
    suppliedShape: box.filter((_, i) => i !== timeAxis).map(([a, b]) => b - a),
    suppliedFullShape: box.map(([a, b]) => b - a),
    suppliedStart: box.map(([a], i) => (i === timeAxis ? 0 : a)),
    ownedShards,
    layout: layoutFor(schema, dims, dtype, attrs, ctx.timeLength),
  };
}

/** Plans for every array of the store, in store order: time coordinate, other coordinates, vars, statics. */
export function planArrays(ctx: PlanContext): ArrayPlan[] {
  const { schema } = ctx;
  const plans: ArrayPlan[] = [];
  plans.push(
    planArray(
      ctx,
      schema.time_dim,
      "time",
      [schema.time_dim],
      "float64",
      schema.coords?.[schema.time_dim]?.attrs,
    ),
  );
  for (const [dim] of schema.dims) {
    const coord = schema.coords?.[dim];
    if (dim === schema.time_dim || coord?.values === undefined) continue;
    plans.push(planArray(ctx, dim, "coord", [dim], "float64", coord.attrs));
  }
  for (const v of schema.vars) plans.push(planArray(ctx, v.name, "var", v.dims, v.dtype, v.attrs));
  for (const s of schema.statics) plans.push(planArray(ctx, s.name, "static", s.dims, s.dtype, s.attrs));
  return plans;
}

/** The box of shard `idx` in array coordinates, clamped to `shape`. */
export function shardBox(layout: ArrayLayout, idx: number[], shape = layout.shape): [number, number][] {
  return idx.map((i, d) => {
    const s = layout.shardShape[d]!;
    return [i * s, Math.min((i + 1) * s, shape[d]!)];
  });
}

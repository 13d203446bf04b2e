import {
  type ArrayLayout,
  arrayZarrJson,
  encodeShard,
  encodeZarrJson,
  groupZarrJson,
  shardKey,
} from "@zarr-stream/shard";
import type { StreamSchema } from "@zarr-stream/spec";
import type { ArrayPlan } from "./array-plan.js";
import { runLimited } from "./limit.js";

/** How the layout is written: a fenced put of the writer handle. */
export type PutObject = (key: string, bytes: Uint8Array) => Promise<void>;

export const GROUP_KEY = "zarr.json";

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

/** The group's zarr.json: create writes it first and create-only, so of racing creators exactly one wins. */
export function groupDocument(schema: StreamSchema): Uint8Array {
  return encodeZarrJson(groupZarrJson({ ...(schema.attrs ?? {}) }));
}

const SHAPE_LINE = /\n {2}"shape": \[[^\]]*\]/;

/**
 * `zarrJson` (an array's zarr.json as stored) with only its shape changed: every other byte, attributes
 * included, stays as the store has it. A document in another layout is re-encoded from its parsed form.
 */
export function withShape(zarrJson: Uint8Array, shape: number[]): Uint8Array {
  const text = new TextDecoder().decode(zarrJson);
  const printed = shape.length === 0 ? "[]" : `[\n${shape.map((n) => `    ${n}`).join(",\n")}\n  ]`;
  if (SHAPE_LINE.test(text))
    return new TextEncoder().encode(text.replace(SHAPE_LINE, `\n  "shape": ${printed}`));
  return encodeZarrJson({ ...(JSON.parse(text) as Record<string, unknown>), shape });
}

/**
 * Writes the zarr.json of every array with a time axis at the new committed time length. `stored` holds
 * each array's zarr.json as last written or read, so attributes survive byte for byte; it is updated.
 */
export async function writeTimeShapes(
  put: PutObject,
  plans: ArrayPlan[],
  timeLength: number,
  stored: Map<string, Uint8Array>,
): Promise<void> {
  await runLimited(
    plans
      .filter((p) => p.timeAxis >= 0)
      .map((p) => async () => {
        p.layout = withTimeLength(p, timeLength);
        const previous = stored.get(p.name);
        const bytes =
          previous === undefined
            ? encodeZarrJson(arrayZarrJson(p.layout))
            : withShape(previous, p.layout.shape);
        await put(zarrJsonKey(p.name), bytes);
        stored.set(p.name, bytes);
      }),
  );
}

/** Writes a whole 1-D float64 coordinate (non-time coords, and the indexed time axis) shard by shard. */
async function writeCoordinate(put: PutObject, plan: ArrayPlan, values: number[]): Promise<void> {
  const { layout } = plan;
  const s = layout.shardShape[0]!;
  const nShards = Math.ceil(values.length / s);
  await runLimited(
    Array.from({ length: nShards }, (_, i) => async () => {
      const data = new Float64Array(s);
      data.set(values.slice(i * s, Math.min((i + 1) * s, values.length)));
      await put(shardKey(plan.name, [i]), await encodeShard(layout, [i], data));
    }),
  );
}

/**
 * Seed §5.1 create, after the group: every array's zarr.json (statics at full shape, streaming arrays at
 * the initial time length) and the coordinate data. The manifest, when one is due, is the caller's last
 * write. Returns each array's zarr.json as written.
 */
export async function writeArrays(
  put: PutObject,
  schema: StreamSchema,
  plans: ArrayPlan[],
): Promise<Map<string, Uint8Array>> {
  const written = new Map<string, Uint8Array>();
  await runLimited(
    plans.map((p) => async () => {
      const bytes = encodeZarrJson(arrayZarrJson(p.layout));
      await put(zarrJsonKey(p.name), bytes);
      written.set(p.name, bytes);
    }),
  );
  for (const plan of plans) {
    if (plan.kind === "coord") await writeCoordinate(put, plan, schema.coords![plan.name]!.values!);
    if (plan.kind === "time" && schema.time_mode !== "append")
      await writeCoordinate(put, plan, schema.time_mode.indexed.times);
  }
  return written;
}

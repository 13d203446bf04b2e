import {
  isV2,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readRecord,
  readStatic,
} from "@zarr-stream/reader";
import type { OutputManifest, Region, TypedArray } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { UsageError } from "../command-line.js";
import { formatTime } from "../time-units.js";
import { storeKind } from "../zarr-arrays.js";
import { plotArrays } from "./arrays.js";
import { type Axis, type RenderResult, renderHeatmap, renderLine } from "./render.js";

export interface PlotRequest {
  variable: string;
  /** Record index; required for a streaming variable, refused for a static. */
  record?: number;
  /** Fixed indices for dims the plot does not show: {lev: 3}. */
  slices?: Record<string, number>;
}

export interface PlotResult extends RenderResult {
  kind: "heatmap" | "line";
  title: string;
}

export function toFloat64(a: TypedArray): Float64Array {
  if (a instanceof Float64Array) return a;
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Number(a[i]!);
  return out;
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The coordinate values of `dim` when the store has a 1-D coordinate array of the dim's length. */
async function coordinate(store: Store, dim: string, length: number): Promise<Axis> {
  if ((await store.size(`${dim}/zarr.json`)) === undefined) return { name: dim };
  const layout = await readArrayLayout(store, dim);
  if (layout.shape.length !== 1 || layout.shape[0] !== length) return { name: dim };
  const coords = toFloat64(await readArrayRegion(store, dim, layout, [[0, length]]));
  const units = str(layout.attributes.units);
  return units === undefined ? { name: dim, coords } : { name: `${dim} (${units})`, coords, units };
}

function checkSlices(
  m: OutputManifest,
  dims: string[],
  slices: Record<string, number>,
  variable: string,
): Region {
  const region: Region = {};
  const lengths = new Map(m.dims.map((d) => [d.name, d.length]));
  for (const [d, k] of Object.entries(slices)) {
    if (!dims.includes(d) || d === m.time_dim) {
      throw new UsageError(
        `--slice ${d}=${k}: ${variable} has no non-time dim ${d} (dims: ${dims.join(", ")})`,
      );
    }
    const len = lengths.get(d)!;
    if (!Number.isInteger(k) || k < 0 || k >= len)
      throw new UsageError(`--slice ${d}=${k} is outside [0, ${len})`);
    region[d] = [k, k + 1];
  }
  return region;
}

async function timeLabel(store: Store, m: OutputManifest, record: number): Promise<string> {
  const layout = await readArrayLayout(store, m.time_dim);
  if (record >= (layout.shape[0] ?? 0)) return `record ${record}`;
  const t = (await readArrayRegion(store, m.time_dim, layout, [[record, record + 1]]))[0];
  return `${formatTime(t!, layout.attributes.units, layout.attributes.calendar)}  [${record}]`;
}

/**
 * Renders committed data of one variable as a PNG: a heatmap for a 2-D slice, a line for 1-D. A Zarr v3
 * store without a manifest is plotted from its arrays as stored (plotArrays). A request that does not fit
 * the store (no such variable, --record missing or not allowed, a bad --slice) is a UsageError.
 */
export async function plotStore(store: Store, req: PlotRequest): Promise<PlotResult> {
  if ((await storeKind(store)) === "zarr") return plotArrays(store, req);
  const m = await readOutputManifest(store);
  const statics = isV2(m) ? m.statics : [];
  const v = m.vars.find((x) => x.name === req.variable);
  const s = statics.find((x) => x.name === req.variable);
  if (!v && !s) {
    const names = [...m.vars, ...statics].map((x) => x.name).join(", ");
    throw new UsageError(
      `--var ${req.variable}: no such variable or static in ${store.url} (have: ${names})`,
    );
  }
  if (v && req.record === undefined)
    throw new UsageError(`--var ${req.variable} is a streaming variable: pass --record I`);
  if (s && req.record !== undefined)
    throw new UsageError(`--var ${req.variable} is a static: it has no --record`);
  const spec = (v ?? s)!;
  const region = checkSlices(m, spec.dims, req.slices ?? {}, req.variable);
  const read = v
    ? await readRecord(store, req.variable, req.record!, region, { manifest: m })
    : await readStatic(store, req.variable, region, { manifest: m });
  const shown = read.dims.filter((d) => !(d in region));
  checkShown(req.variable, shown);
  const attrs = (await readArrayLayout(store, req.variable)).attributes;
  const units = str(attrs.units) ?? "";
  const name = str(attrs.long_name) ?? req.variable;
  const when = v ? `  ${await timeLabel(store, m, req.record!)}` : "";
  const fixed = Object.entries(req.slices ?? {})
    .map(([d, k]) => `  ${d}=${k}`)
    .join("");
  const title = `${name}${units ? ` (${units})` : ""}${when}${fixed}`;
  const values = toFloat64(read.data);
  const lengths = shown.map((d) => read.shape[read.dims.indexOf(d)]!);
  const axes = await Promise.all(shown.map((d, i) => coordinate(store, d, lengths[i]!)));
  return renderSlice(values, lengths, axes, title, units);
}

/** The dims a plot shows must be one (a line) or two (a heatmap). */
export function checkShown(variable: string, shown: string[]): void {
  if (shown.length === 0)
    throw new UsageError(`--slice leaves a single value of ${variable}: nothing to plot`);
  if (shown.length > 2)
    throw new UsageError(
      `--var ${variable} has ${shown.length} dims left (${shown.join(", ")}): add --slice dim=k for all but two`,
    );
}

/** The picture of a selected slice: a line for one dim, a heatmap for two (rows the first dim). */
export function renderSlice(
  values: Float64Array,
  lengths: number[],
  axes: Axis[],
  title: string,
  units: string,
): PlotResult {
  if (lengths.length === 1) return { ...renderLine(values, axes[0]!, title, units), kind: "line", title };
  return {
    ...renderHeatmap(values, lengths[0]!, lengths[1]!, axes[0]!, axes[1]!, title, units),
    kind: "heatmap",
    title,
  };
}

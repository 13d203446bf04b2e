// What a plot draws, from either kind of store (plot.ts for stores with a manifest, arrays.ts for plain
// Zarr v3 stores): axes, selections, labels, and the slice and series renderers.
import type { Region, TypedArray } from "@zarr-stream/spec";
import { UsageError } from "../command-line.js";
import type { Picture } from "../picture/frame.js";
import { type AxisSpec, renderHeatmap } from "../picture/heatmap.js";
import { isLatitude, prettyUnits, withUnits } from "../picture/labels.js";
import { renderLine } from "../picture/line.js";
import type { PictureOptions, Slice } from "../picture/options.js";
import { valueLabel } from "../picture/ticks.js";
import { formatTime } from "../time-units.js";
import { timeAxis } from "./time-axis.js";

export interface PlotRequest extends Partial<PictureOptions> {
  variable: string;
  /** Record index; required for a map or line of a streaming variable, refused for a static. */
  record?: number;
  /** Per dim not shown: an index ({lev: 3}); or a range [start, stop) to show (a map) or average (a series). */
  slices?: Record<string, Slice>;
  /**
   * A time series over the committed records: the value at the point the slices fix, or the mean over
   * the region they leave (finite values, unweighted).
   */
  series?: boolean;
}

export interface PlotResult extends Picture {
  kind: "heatmap" | "line" | "series";
  /** Title and subtitle in one line. */
  title: string;
  /** A series: the committed records, their t as stored, and the values drawn (NaN: no finite value). */
  series?: { records: number[]; t: number[]; values: number[] };
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

export interface DimAxis extends AxisSpec {
  dim: string;
  units?: string;
}

/** The axis of a dim over indices [start, stop): from the store's coordinate array of the dim, if any. */
export type AxisOf = (dim: string, range: [number, number]) => Promise<DimAxis>;

/**
 * The axis of `dim` from its coordinate's attributes and values (read over the range asked); the index
 * when there is no coordinate (attrs undefined).
 */
export async function axisFrom(
  dim: string,
  attrs: Record<string, unknown> | undefined,
  read: (() => Promise<Float64Array>) | undefined,
): Promise<DimAxis> {
  if (attrs === undefined || read === undefined)
    return { dim, label: `${dim} (index)`, latitude: isLatitude(dim, attrs ?? {}) };
  const units = str(attrs.units);
  return {
    dim,
    label: withUnits(str(attrs.long_name) ?? dim, units),
    coords: await read(),
    latitude: isLatitude(dim, attrs),
    down: str(attrs.positive)?.toLowerCase() === "down",
    ...(units === undefined ? {} : { units }),
  };
}

/**
 * Per dim of the variable, its [start, stop) from the slices (whole when not sliced). A slice of a dim
 * the variable lacks, of the time dim, or past the dim's end is a UsageError.
 */
export function selection(
  variable: string,
  dims: string[],
  lengthOf: (dim: string) => number,
  timeDim: string | undefined,
  slices: Record<string, Slice>,
): { region: Region; fixed: Set<string> } {
  const region: Region = {};
  const fixed = new Set<string>();
  for (const [d, s] of Object.entries(slices)) {
    const shown = typeof s === "number" ? `${s}` : `${s[0]}:${s[1]}`;
    if (!dims.includes(d) || d === timeDim)
      throw new UsageError(
        `--slice ${d}=${shown}: ${variable} has no non-time dim ${d} (dims: ${dims.join(", ")})`,
      );
    const len = lengthOf(d);
    const [a, b] = typeof s === "number" ? [s, s + 1] : s;
    if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b > len || a >= b)
      throw new UsageError(`--slice ${d}=${shown} is outside [0, ${len})`);
    region[d] = [a, b];
    if (typeof s === "number") fixed.add(d);
  }
  return { region, fixed };
}

/** "lat = −1.75°N [18]" with a coordinate, "lat [18]" without. */
export async function fixedLabel(axisOf: AxisOf, dim: string, k: number): Promise<string> {
  const axis = await axisOf(dim, [k, k + 1]);
  const v = axis.coords?.[0];
  if (v === undefined) return `${dim} [${k}]`;
  const u = prettyUnits(axis.units);
  const sep = u.startsWith("°") || u === "" ? "" : " ";
  return `${dim} = ${valueLabel(v)}${sep}${u} [${k}]`;
}

/** A record's time for a subtitle: "2000-01-02 03:00 [record 5]", in the time coordinate's calendar. */
export function recordTimeLabel(t: number | bigint, attrs: Record<string, unknown>, record: number): string {
  return `${formatTime(t, attrs.units, attrs.calendar).replace(/^t = /, "")} [record ${record}]`;
}

export function mean(a: Float64Array): number {
  let sum = 0;
  let n = 0;
  for (const v of a) {
    if (!Number.isFinite(v)) continue;
    sum += v;
    n++;
  }
  return n === 0 ? Number.NaN : sum / n;
}

/** What a series shows, from either kind of store. */
export interface SeriesInput {
  variable: string;
  /** The variable's long_name (or name) and units. */
  name: string;
  units: string | undefined;
  records: number[];
  t: number[];
  timeDim: string;
  timeAttrs: Record<string, unknown>;
  /** Per record, the value drawn. */
  y: Float64Array;
  /** The variable's dims other than time. */
  space: string[];
  region: Region;
  fixed: Set<string>;
  axisOf: AxisOf;
}

/** A time series against time decoded in the coordinate's CF calendar (time-axis.ts). */
export async function renderSeries(s: SeriesInput, picture: PictureOptions): Promise<PlotResult> {
  const at = await Promise.all(
    [...s.fixed].map((d) => fixedLabel(s.axisOf, d, (s.region[d] as [number, number])[0])),
  );
  const averaged = s.space
    .filter((d) => !s.fixed.has(d))
    .map((d) => (s.region[d] ? `${d} [${s.region[d]![0]}:${s.region[d]![1]}]` : d));
  const subtitle = [
    ...(averaged.length > 0 ? [`mean over ${averaged.join(", ")} (unweighted)`] : []),
    ...(at.length > 0 ? [`at ${at.join(", ")}`] : []),
  ].join("; ");
  const title = withUnits(s.name, s.units);
  const axis = timeAxis(s.t, s.timeDim, s.timeAttrs.units, s.timeAttrs.calendar);
  const pic = renderLine(
    {
      x: axis.x,
      y: s.y,
      xLabel: axis.label,
      time: axis.time,
      ...(axis.tickLabels === undefined ? {} : { xTickLabels: axis.tickLabels }),
      integers: false,
      yLabel: title,
      title,
      ...(subtitle === "" ? {} : { subtitle }),
    },
    picture,
  );
  return {
    ...pic,
    kind: "series",
    title: subtitle === "" ? title : `${title}, ${subtitle}`,
    series: { records: s.records, t: s.t, values: [...s.y] },
  };
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

/** A selected slice of either kind of store, ready to draw. */
export interface SliceInput {
  /** Row-major over the shown dims. */
  values: Float64Array;
  lengths: number[];
  shown: string[];
  /** The selection: a range slice of a shown dim starts its axis past 0. */
  region: Region;
  axisOf: AxisOf;
  name: string;
  units: string | undefined;
  /** Record time and fixed dims, "" for none. */
  subtitle: string;
}

/**
 * The picture of a selected slice: a line for one dim, a heatmap for two (rows the first dim; north up,
 * a [lon, lat] field transposed, whenever the latitude axis is known).
 */
export async function renderSlice(s: SliceInput, picture: PictureOptions): Promise<PlotResult> {
  const { values, lengths, shown, region } = s;
  const title = withUnits(s.name, s.units);
  const oneLine = s.subtitle === "" ? title : `${title}, ${s.subtitle}`;
  const axes = await Promise.all(
    shown.map((d, i) => s.axisOf(d, (region[d] as [number, number] | undefined) ?? [0, lengths[i]!])),
  );
  const common = { title, ...(s.subtitle === "" ? {} : { subtitle: s.subtitle }) };
  if (shown.length === 1) {
    const axis = axes[0]!;
    const coords = axis.coords?.every(Number.isFinite) ? axis.coords : undefined;
    const x = coords ?? Float64Array.from(values, (_, i) => i + (region[axis.dim]?.[0] ?? 0));
    const pic = renderLine(
      { ...common, x, y: values, xLabel: axis.label, integers: coords === undefined, yLabel: title },
      picture,
    );
    return { ...pic, kind: "line", title: oneLine };
  }
  // north up: a latitude axis is drawn vertical, so a [lon, lat] field is transposed
  let [ya, xa] = axes as [DimAxis, DimAxis];
  let [ny, nx] = lengths as [number, number];
  let field = values;
  if (xa.latitude && !ya.latitude) {
    field = new Float64Array(values.length);
    for (let i = 0; i < ny; i++) for (let j = 0; j < nx; j++) field[j * ny + i] = values[i * nx + j]!;
    [ya, xa] = [xa, ya];
    [ny, nx] = [nx, ny];
  }
  const pic = renderHeatmap(
    {
      ...common,
      values: field,
      ny,
      nx,
      y: indexFrom(ya, region),
      x: indexFrom(xa, region),
      label: prettyUnits(s.units),
    },
    picture,
  );
  return { ...pic, kind: "heatmap", title: oneLine };
}

/** An index axis of a range slice counts from the range's start, as the store does. */
function indexFrom(axis: DimAxis, region: Region): AxisSpec {
  const start = region[axis.dim]?.[0] ?? 0;
  if (axis.coords !== undefined || start === 0) return axis;
  return { ...axis, offset: start };
}

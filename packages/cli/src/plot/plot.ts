import {
  isV2,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readRecord,
  readStatic,
} from "@zarr-stream/reader";
import type { OutputManifest, Region, TypedArray, VariableSpec } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { UsageError } from "../command-line.js";
import { DEFAULT_CMAP } from "../picture/colormap.js";
import type { Picture } from "../picture/frame.js";
import { type AxisSpec, renderHeatmap } from "../picture/heatmap.js";
import { isLatitude, prettyUnits, withUnits } from "../picture/labels.js";
import { renderLine } from "../picture/line.js";
import type { PictureOptions, Slice } from "../picture/options.js";
import { valueLabel } from "../picture/ticks.js";
import { formatTime } from "../time-units.js";
import { storeKind } from "../zarr-arrays.js";
import { plotArrays } from "./arrays.js";
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

/** A manifest store's axes: the 1-D coordinate array of the dim's length when there is one. */
function manifestAxes(store: Store, m: OutputManifest): AxisOf {
  return async (dim, [start, stop]) => {
    const length = m.dims.find((d) => d.name === dim)?.length ?? 0;
    if ((await store.size(`${dim}/zarr.json`)) === undefined) return axisFrom(dim, undefined, undefined);
    const layout = await readArrayLayout(store, dim);
    if (layout.shape.length !== 1 || layout.shape[0] !== length)
      return { dim, label: `${dim} (index)`, latitude: isLatitude(dim, layout.attributes) };
    return axisFrom(dim, layout.attributes, async () =>
      toFloat64(await readArrayRegion(store, dim, layout, [[start, stop]])),
    );
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

async function recordTime(store: Store, m: OutputManifest, record: number): Promise<string> {
  const layout = await readArrayLayout(store, m.time_dim);
  if (record >= (layout.shape[0] ?? 0)) return `record ${record}`;
  const t = (await readArrayRegion(store, m.time_dim, layout, [[record, record + 1]]))[0]!;
  return recordTimeLabel(t, layout.attributes, record);
}

/** The committed records and their t as stored, with the time coordinate's attributes. */
async function committedTimes(
  store: Store,
  m: OutputManifest,
): Promise<{ records: number[]; t: number[]; attrs: Record<string, unknown> }> {
  let records: number[];
  let t: number[];
  if (isV2(m) && m.time_mode === "indexed") {
    const entries = (m.records?.entries ?? []).map((e, i) => ({ ...e, i })).filter((e) => e.committed);
    records = entries.map((e) => e.i);
    t = entries.map((e) => e.t);
  } else {
    records = Array.from({ length: m.n_records }, (_, i) => i);
    const layout = await readArrayLayout(store, m.time_dim);
    t =
      m.n_records === 0
        ? []
        : [...toFloat64(await readArrayRegion(store, m.time_dim, layout, [[0, m.n_records]]))];
  }
  const attrs =
    (await store.size(`${m.time_dim}/zarr.json`)) === undefined
      ? {}
      : (await readArrayLayout(store, m.time_dim)).attributes;
  return { records, t, attrs };
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

/** The picture options of a request, defaults filled in. */
function pictureOf(req: PlotRequest): PictureOptions {
  return {
    cmap: req.cmap ?? DEFAULT_CMAP,
    ...(req.vmin === undefined ? {} : { vmin: req.vmin }),
    ...(req.vmax === undefined ? {} : { vmax: req.vmax }),
    ...(req.size === undefined ? {} : { size: req.size }),
  };
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

async function plotSeries(
  store: Store,
  m: OutputManifest,
  spec: VariableSpec,
  req: PlotRequest,
  picture: PictureOptions,
): Promise<PlotResult> {
  const lengths = new Map(m.dims.map((d) => [d.name, d.length]));
  const { region, fixed } = selection(
    req.variable,
    spec.dims,
    (d) => lengths.get(d)!,
    m.time_dim,
    req.slices ?? {},
  );
  const { records, t, attrs } = await committedTimes(store, m);
  if (records.length === 0)
    throw new UsageError(`--series: ${req.variable} has no committed records to plot`);
  const y = new Float64Array(records.length);
  for (let i = 0; i < records.length; i++) {
    const r = await readRecord(store, req.variable, records[i]!, region, { manifest: m });
    y[i] = mean(toFloat64(r.data));
  }
  const vattrs = (await readArrayLayout(store, req.variable)).attributes;
  return renderSeries(
    {
      variable: req.variable,
      name: str(vattrs.long_name) ?? req.variable,
      units: str(vattrs.units),
      records,
      t,
      timeDim: m.time_dim,
      timeAttrs: attrs,
      y,
      space: spec.dims.filter((d) => d !== m.time_dim),
      region,
      fixed,
      axisOf: manifestAxes(store, m),
    },
    picture,
  );
}

/**
 * Renders committed data of one variable as a picture (PNG and SVG): a heatmap for a 2-D slice, a line
 * for 1-D, or with `series` a time series over the committed records. A Zarr v3 store without a manifest
 * is plotted from its arrays as stored (plotArrays). A request that does not fit the store (no such
 * variable, --record missing or not allowed, a bad --slice, --series of a static) is a UsageError.
 */
export async function plotStore(store: Store, req: PlotRequest): Promise<PlotResult> {
  const picture = pictureOf(req);
  if ((await storeKind(store)) === "zarr") return plotArrays(store, req, picture);
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
  if (req.series) {
    if (s) throw new UsageError(`--var ${req.variable} is a static: it has no records for a time series`);
    if (req.record !== undefined)
      throw new UsageError("--series plots every committed record: it takes no --record");
    return plotSeries(store, m, v!, req, picture);
  }
  if (v && req.record === undefined)
    throw new UsageError(`--var ${req.variable} is a streaming variable: pass --record I (or --series)`);
  if (s && req.record !== undefined)
    throw new UsageError(`--var ${req.variable} is a static: it has no --record`);
  const spec = (v ?? s)!;
  const lengthsOf = new Map(m.dims.map((d) => [d.name, d.length]));
  const { region, fixed } = selection(
    req.variable,
    spec.dims,
    (d) => lengthsOf.get(d)!,
    m.time_dim,
    req.slices ?? {},
  );
  const read = v
    ? await readRecord(store, req.variable, req.record!, region, { manifest: m })
    : await readStatic(store, req.variable, region, { manifest: m });
  const shown = read.dims.filter((d) => !fixed.has(d));
  checkShown(req.variable, shown);
  const attrs = (await readArrayLayout(store, req.variable)).attributes;
  const axisOf = manifestAxes(store, m);
  const at = await Promise.all(
    [...fixed].map((d) => fixedLabel(axisOf, d, (region[d] as [number, number])[0])),
  );
  const subtitle = [...(v ? [await recordTime(store, m, req.record!)] : []), ...at].join(", ");
  return renderSlice(
    {
      values: toFloat64(read.data),
      lengths: shown.map((d) => read.shape[read.dims.indexOf(d)]!),
      shown,
      region,
      axisOf,
      name: str(attrs.long_name) ?? req.variable,
      units: str(attrs.units),
      subtitle,
    },
    picture,
  );
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

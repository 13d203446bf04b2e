import {
  isV2,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readRecord,
  readStatic,
} from "@zarr-stream/reader";
import {
  type OutputManifest,
  type Region,
  SchemaError,
  type TypedArray,
  type VariableSpec,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { DEFAULT_CMAP } from "../picture/colormap.js";
import type { Picture } from "../picture/frame.js";
import { type AxisSpec, renderHeatmap } from "../picture/heatmap.js";
import { isLatitude, prettyUnits, withUnits } from "../picture/labels.js";
import { renderLine } from "../picture/line.js";
import type { PictureOptions, Slice } from "../picture/options.js";
import { valueLabel } from "../picture/ticks.js";
import { cfTimeToDate, formatTime } from "../time-units.js";

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

function toFloat64(a: TypedArray): Float64Array {
  if (a instanceof Float64Array) return a;
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Number(a[i]!);
  return out;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

interface DimAxis extends AxisSpec {
  dim: string;
  units?: string;
}

/**
 * The axis of `dim` over indices [start, stop): the store's 1-D coordinate array of the dim's length
 * when there is one (values, CF name and units, latitude and `positive: down` from its attributes), the
 * index otherwise.
 */
async function dimAxis(
  store: Store,
  m: OutputManifest,
  dim: string,
  [start, stop]: [number, number],
): Promise<DimAxis> {
  const length = m.dims.find((d) => d.name === dim)?.length ?? 0;
  const latitude = isLatitude(dim);
  if ((await store.size(`${dim}/zarr.json`)) === undefined) return { dim, label: `${dim} (index)`, latitude };
  const layout = await readArrayLayout(store, dim);
  const attrs = layout.attributes;
  if (layout.shape.length !== 1 || layout.shape[0] !== length)
    return { dim, label: `${dim} (index)`, latitude: isLatitude(dim, attrs) };
  const coords = toFloat64(await readArrayRegion(store, dim, layout, [[start, stop]]));
  const units = str(attrs.units);
  return {
    dim,
    label: withUnits(str(attrs.long_name) ?? dim, units),
    coords,
    latitude: isLatitude(dim, attrs),
    down: str(attrs.positive)?.toLowerCase() === "down",
    ...(units === undefined ? {} : { units }),
  };
}

/** Per dim of the variable, its [start, stop) from the slices (whole when not sliced); bad slices refused. */
function selection(
  m: OutputManifest,
  spec: VariableSpec,
  slices: Record<string, Slice>,
): { region: Region; fixed: Set<string> } {
  const lengths = new Map(m.dims.map((d) => [d.name, d.length]));
  const region: Region = {};
  const fixed = new Set<string>();
  for (const [d, s] of Object.entries(slices)) {
    const shown = typeof s === "number" ? `${s}` : `${s[0]}:${s[1]}`;
    if (!spec.dims.includes(d) || d === m.time_dim) {
      throw new SchemaError(
        `--slice ${d}=${shown}: ${spec.name} has no non-time dim ${d} (dims: ${spec.dims.join(", ")})`,
        `/slice/${d}`,
      );
    }
    const len = lengths.get(d)!;
    const [a, b] = typeof s === "number" ? [s, s + 1] : s;
    if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b > len || a >= b)
      throw new SchemaError(`--slice ${d}=${shown} is outside [0, ${len})`, `/slice/${d}`);
    region[d] = [a, b];
    if (typeof s === "number") fixed.add(d);
  }
  return { region, fixed };
}

/** "lat = −1.75°N [18]" with a coordinate, "lat [18]" without. */
async function fixedLabel(store: Store, m: OutputManifest, dim: string, k: number): Promise<string> {
  const axis = await dimAxis(store, m, dim, [k, k + 1]);
  const v = axis.coords?.[0];
  if (v === undefined) return `${dim} [${k}]`;
  const u = prettyUnits(axis.units);
  const sep = u.startsWith("°") || u === "" ? "" : " ";
  return `${dim} = ${valueLabel(v)}${sep}${u} [${k}]`;
}

async function recordTime(store: Store, m: OutputManifest, record: number): Promise<string> {
  const layout = await readArrayLayout(store, m.time_dim);
  if (record >= (layout.shape[0] ?? 0)) return `record ${record}`;
  const t = (await readArrayRegion(store, m.time_dim, layout, [[record, record + 1]]))[0];
  return `${formatTime(Number(t), layout.attributes.units).replace(/^t = /, "")} [record ${record}]`;
}

/** Calendars a JavaScript Date counts in; others (noleap, 360_day, …) keep a numeric time axis. */
const DATE_CALENDARS = new Set(["standard", "gregorian", "proleptic_gregorian"]);

/** The committed records, their t, and how to draw t: as instants when the CF units and calendar allow. */
async function committedTimes(
  store: Store,
  m: OutputManifest,
): Promise<{ records: number[]; t: number[]; x: Float64Array; time: boolean; label: string }> {
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
  const units = str(attrs.units);
  const calendar = (str(attrs.calendar) ?? "standard").toLowerCase();
  const dates = DATE_CALENDARS.has(calendar) ? t.map((v) => cfTimeToDate(v, units)) : [];
  if (dates.length > 0 && dates.every((d) => d !== undefined))
    return {
      records,
      t,
      x: Float64Array.from(dates, (d) => d!.getTime()),
      time: true,
      label: `${m.time_dim} (UTC)`,
    };
  const unitLabel = [units, DATE_CALENDARS.has(calendar) ? undefined : calendar].filter(Boolean).join(", ");
  return {
    records,
    t,
    x: Float64Array.from(t),
    time: false,
    label: unitLabel === "" ? m.time_dim : `${m.time_dim} (${unitLabel})`,
  };
}

function mean(a: Float64Array): number {
  let sum = 0;
  let n = 0;
  for (const v of a) {
    if (!Number.isFinite(v)) continue;
    sum += v;
    n++;
  }
  return n === 0 ? Number.NaN : sum / n;
}

/** The variable's name as shown and its CF attributes: long_name, units. */
async function describe(
  store: Store,
  variable: string,
): Promise<{ name: string; units: string | undefined }> {
  const attrs = (await readArrayLayout(store, variable)).attributes;
  return { name: str(attrs.long_name) ?? variable, units: str(attrs.units) };
}

async function plotSeries(
  store: Store,
  m: OutputManifest,
  spec: VariableSpec,
  req: PlotRequest,
  picture: PictureOptions,
): Promise<PlotResult> {
  const { region, fixed } = selection(m, spec, req.slices ?? {});
  const { records, t, x, time, label } = await committedTimes(store, m);
  if (records.length === 0)
    throw new SchemaError(`${req.variable} has no committed records to plot`, "/series");
  const y = new Float64Array(records.length);
  for (let i = 0; i < records.length; i++) {
    const r = await readRecord(store, req.variable, records[i]!, region, { manifest: m });
    y[i] = mean(toFloat64(r.data));
  }
  const { name, units } = await describe(store, req.variable);
  const space = spec.dims.filter((d) => d !== m.time_dim);
  const at = await Promise.all(
    [...fixed].map((d) => fixedLabel(store, m, d, (region[d] as [number, number])[0])),
  );
  const averaged = space
    .filter((d) => !fixed.has(d))
    .map((d) => (region[d] ? `${d} [${region[d]![0]}:${region[d]![1]}]` : d));
  const subtitle = [
    ...(averaged.length > 0 ? [`mean over ${averaged.join(", ")} (unweighted)`] : []),
    ...(at.length > 0 ? [`at ${at.join(", ")}`] : []),
  ].join("; ");
  const title = withUnits(name, units);
  const pic = renderLine(
    {
      x,
      y,
      xLabel: label,
      time,
      integers: false,
      yLabel: withUnits(name, units),
      title,
      ...(subtitle === "" ? {} : { subtitle }),
    },
    picture,
  );
  return {
    ...pic,
    kind: "series",
    title: subtitle === "" ? title : `${title}, ${subtitle}`,
    series: { records, t, values: [...y] },
  };
}

/**
 * Renders committed data of one variable as a picture (PNG and SVG): a heatmap for a 2-D slice, a line
 * for 1-D, or with `series` a time series over the committed records.
 */
export async function plotStore(store: Store, req: PlotRequest): Promise<PlotResult> {
  const picture: PictureOptions = {
    cmap: req.cmap ?? DEFAULT_CMAP,
    ...(req.vmin === undefined ? {} : { vmin: req.vmin }),
    ...(req.vmax === undefined ? {} : { vmax: req.vmax }),
    ...(req.size === undefined ? {} : { size: req.size }),
  };
  const m = await readOutputManifest(store);
  const statics = isV2(m) ? m.statics : [];
  const v = m.vars.find((x) => x.name === req.variable);
  const s = statics.find((x) => x.name === req.variable);
  if (!v && !s) {
    const names = [...m.vars, ...statics].map((x) => x.name).join(", ");
    throw new SchemaError(
      `no variable or static ${JSON.stringify(req.variable)} in ${store.url} (have: ${names})`,
      "/var",
    );
  }
  if (req.series) {
    if (s)
      throw new SchemaError(`${req.variable} is a static: it has no records for a time series`, "/series");
    if (req.record !== undefined)
      throw new SchemaError("a time series spans every committed record: it takes no --record", "/record");
    return plotSeries(store, m, v!, req, picture);
  }
  if (v && req.record === undefined)
    throw new SchemaError(
      `${req.variable} is a streaming variable: pass --record I (or --series)`,
      "/record",
    );
  if (s && req.record !== undefined)
    throw new SchemaError(`${req.variable} is a static: it has no --record`, "/record");
  const spec = (v ?? s)!;
  const { region, fixed } = selection(m, spec, req.slices ?? {});
  const read = v
    ? await readRecord(store, req.variable, req.record!, region, { manifest: m })
    : await readStatic(store, req.variable, region, { manifest: m });
  const shown = read.dims.filter((d) => !fixed.has(d));
  if (shown.length === 0)
    throw new SchemaError(`--slice leaves a single value of ${req.variable}: nothing to plot`, "/slice");
  if (shown.length > 2) {
    throw new SchemaError(
      `${req.variable} has ${shown.length} dims left (${shown.join(", ")}): add --slice dim=k for all but two`,
      "/slice",
    );
  }
  const { name, units } = await describe(store, req.variable);
  const at = await Promise.all(
    [...fixed].map((d) => fixedLabel(store, m, d, (region[d] as [number, number])[0])),
  );
  const subtitle = [...(v ? [await recordTime(store, m, req.record!)] : []), ...at].join(", ");
  const title = withUnits(name, units);
  const oneLine = subtitle === "" ? title : `${title}, ${subtitle}`;
  const values = toFloat64(read.data);
  const lengths = shown.map((d) => read.shape[read.dims.indexOf(d)]!);
  const axes = await Promise.all(
    shown.map((d) =>
      dimAxis(store, m, d, (region[d] as [number, number] | undefined) ?? [0, lengths[shown.indexOf(d)]!]),
    ),
  );
  const common = { title, ...(subtitle === "" ? {} : { subtitle }) };
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
      label: prettyUnits(units),
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

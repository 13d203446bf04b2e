import {
  isV2,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readRecord,
  readStatic,
} from "@zarr-stream/reader";
import type { OutputManifest, VariableSpec } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { UsageError } from "../command-line.js";
import { DEFAULT_CMAP } from "../picture/colormap.js";
import { isLatitude } from "../picture/labels.js";
import type { PictureOptions } from "../picture/options.js";
import { storeKind } from "../zarr-arrays.js";
import { plotArrays } from "./arrays.js";
import {
  type AxisOf,
  axisFrom,
  checkShown,
  fixedLabel,
  mean,
  type PlotRequest,
  type PlotResult,
  recordTimeLabel,
  renderSeries,
  renderSlice,
  selection,
  str,
  toFloat64,
} from "./render.js";

export type { PlotRequest, PlotResult } from "./render.js";

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

/** The picture options of a request, defaults filled in. */
function pictureOf(req: PlotRequest): PictureOptions {
  return {
    cmap: req.cmap ?? DEFAULT_CMAP,
    ...(req.vmin === undefined ? {} : { vmin: req.vmin }),
    ...(req.vmax === undefined ? {} : { vmax: req.vmax }),
    ...(req.size === undefined ? {} : { size: req.size }),
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

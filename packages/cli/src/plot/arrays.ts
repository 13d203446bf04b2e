import { readArrayRegion } from "@zarr-stream/reader";
import type { Store } from "@zarr-stream/store";
import { UsageError } from "../command-line.js";
import type { PictureOptions } from "../picture/options.js";
import { type PlainArray, plainArrays, timeAxisOf } from "../zarr-arrays.js";
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

/** A plain store's axes: a 1-D array named by the dim, of the dim's length, is its coordinate. */
function plainAxes(store: Store, arrays: PlainArray[], lengthOf: (dim: string) => number): AxisOf {
  return async (dim, [start, stop]) => {
    const c = arrays.find((a) => a.name === dim && a.dims.length === 1 && a.array.shape[0] === lengthOf(dim));
    if (c === undefined) return axisFrom(dim, undefined, undefined);
    return axisFrom(dim, c.attributes, async () =>
      toFloat64(await readArrayRegion(store, c.name, c.array, [[start, stop]])),
    );
  };
}

/**
 * Plots an array of a Zarr v3 store without a manifest (zarr-python, xarray): --record picks an index
 * along its CF time dim (the dim of a 1-D array with "<unit> since <date>" units), --series runs along
 * it, --slice fixes or narrows the others. Every value stored is drawn: there is no committed state.
 */
export async function plotArrays(
  store: Store,
  req: PlotRequest,
  picture: PictureOptions,
): Promise<PlotResult> {
  const arrays = await plainArrays(store);
  const a = arrays.find((x) => x.name === req.variable);
  if (a === undefined)
    throw new UsageError(
      `--var ${req.variable}: no such array in ${store.url} (have: ${arrays.map((x) => x.name).join(", ")})`,
    );
  const axis = timeAxisOf(arrays);
  const timeDim =
    axis !== undefined && a.dims.includes(axis.name) && a.name !== axis.name ? axis.name : undefined;
  if (req.series && timeDim === undefined)
    throw new UsageError(`--var ${req.variable} has no CF time dim: it has no time series (--series)`);
  if (req.series && req.record !== undefined)
    throw new UsageError("--series plots every committed record: it takes no --record");
  if (timeDim !== undefined && !req.series && req.record === undefined)
    throw new UsageError(`--var ${req.variable} has the time dim ${timeDim}: pass --record I (or --series)`);
  if (timeDim === undefined && req.record !== undefined)
    throw new UsageError(`--var ${req.variable} has no CF time dim: it takes no --record`);
  const lengthOf = (d: string) => a.array.shape[a.dims.indexOf(d)]!;
  const { region, fixed } = selection(req.variable, a.dims, lengthOf, timeDim, req.slices ?? {});
  const axisOf = plainAxes(store, arrays, lengthOf);
  const name = str(a.attributes.long_name) ?? req.variable;
  const units = str(a.attributes.units);
  const sel = (timeIndex?: number): [number, number][] =>
    a.dims.map((d, i) =>
      d === timeDim && timeIndex !== undefined
        ? [timeIndex, timeIndex + 1]
        : ((region[d] as [number, number] | undefined) ?? [0, a.array.shape[i]!]),
    );
  const t = timeDim === undefined ? undefined : arrays.find((x) => x.name === timeDim)!;
  if (req.series) {
    const n = lengthOf(timeDim!);
    if (n === 0) throw new UsageError(`--series: ${req.variable} has no values along ${timeDim}`);
    const times = [...toFloat64(await readArrayRegion(store, t!.name, t!.array, [[0, n]]))];
    const y = new Float64Array(n);
    for (let i = 0; i < n; i++) y[i] = mean(toFloat64(await readArrayRegion(store, a.name, a.array, sel(i))));
    return renderSeries(
      {
        variable: req.variable,
        name,
        units,
        records: Array.from({ length: n }, (_, i) => i),
        t: times,
        timeDim: timeDim!,
        timeAttrs: t!.attributes,
        y,
        space: a.dims.filter((d) => d !== timeDim),
        region,
        fixed,
        axisOf,
      },
      picture,
    );
  }
  let when: string[] = [];
  if (timeDim !== undefined) {
    const n = lengthOf(timeDim);
    if (req.record! >= n) throw new UsageError(`--record ${req.record} is outside [0, ${n}) of ${timeDim}`);
    const value = (await readArrayRegion(store, t!.name, t!.array, [[req.record!, req.record! + 1]]))[0]!;
    when = [recordTimeLabel(value, { units: axis!.units, calendar: axis!.calendar }, req.record!)];
  }
  const shown = a.dims.filter((d) => d !== timeDim && !fixed.has(d));
  checkShown(req.variable, shown);
  const values = toFloat64(await readArrayRegion(store, a.name, a.array, sel(req.record)));
  const at = await Promise.all(
    [...fixed].map((d) => fixedLabel(axisOf, d, (region[d] as [number, number])[0])),
  );
  return renderSlice(
    {
      values,
      lengths: shown.map((d) => {
        const r = region[d] as [number, number] | undefined;
        return r === undefined ? lengthOf(d) : r[1] - r[0];
      }),
      shown,
      region,
      axisOf,
      name,
      units,
      subtitle: [...when, ...at].join(", "),
    },
    picture,
  );
}

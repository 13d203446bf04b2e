import { readArrayRegion } from "@zarr-stream/reader";
import type { Store } from "@zarr-stream/store";
import { UsageError } from "../command-line.js";
import { formatTime } from "../time-units.js";
import { type PlainArray, plainArrays, timeAxisOf } from "../zarr-arrays.js";
import { checkShown, type PlotRequest, type PlotResult, renderSlice, str, toFloat64 } from "./plot.js";
import type { Axis } from "./render.js";

/** The coordinate values of `dim`: a 1-D array named by the dim, of the dim's length. */
async function coordinate(store: Store, arrays: PlainArray[], dim: string, length: number): Promise<Axis> {
  const c = arrays.find((a) => a.name === dim && a.dims.length === 1 && a.array.shape[0] === length);
  if (c === undefined) return { name: dim };
  const coords = toFloat64(await readArrayRegion(store, c.name, c.array, [[0, length]]));
  const units = str(c.attributes.units);
  return units === undefined ? { name: dim, coords } : { name: `${dim} (${units})`, coords, units };
}

/**
 * Plots an array of a Zarr v3 store without a manifest (zarr-python, xarray): --record picks an index
 * along its CF time dim (the dim of a 1-D array with "<unit> since <date>" units), --slice fixes others.
 */
export async function plotArrays(store: Store, req: PlotRequest): Promise<PlotResult> {
  const arrays = await plainArrays(store);
  const a = arrays.find((x) => x.name === req.variable);
  if (a === undefined)
    throw new UsageError(
      `--var ${req.variable}: no such array in ${store.url} (have: ${arrays.map((x) => x.name).join(", ")})`,
    );
  const axis = timeAxisOf(arrays);
  const timeDim =
    axis !== undefined && a.dims.includes(axis.name) && a.name !== axis.name ? axis.name : undefined;
  if (timeDim !== undefined && req.record === undefined)
    throw new UsageError(`--var ${req.variable} has the time dim ${timeDim}: pass --record I`);
  if (timeDim === undefined && req.record !== undefined)
    throw new UsageError(`--var ${req.variable} has no CF time dim: it takes no --record`);
  const sel: [number, number][] = a.array.shape.map((n) => [0, n]);
  const fixed: Record<string, number> = { ...(req.slices ?? {}) };
  for (const [d, k] of Object.entries(fixed)) {
    const i = a.dims.indexOf(d);
    if (i < 0 || d === timeDim)
      throw new UsageError(
        `--slice ${d}=${k}: ${req.variable} has no non-time dim ${d} (dims: ${a.dims.join(", ")})`,
      );
    if (k >= a.array.shape[i]!) throw new UsageError(`--slice ${d}=${k} is outside [0, ${a.array.shape[i]})`);
  }
  let when = "";
  if (timeDim !== undefined) {
    const i = a.dims.indexOf(timeDim);
    const n = a.array.shape[i]!;
    if (req.record! >= n) throw new UsageError(`--record ${req.record} is outside [0, ${n}) of ${timeDim}`);
    fixed[timeDim] = req.record!;
    const t = arrays.find((x) => x.name === timeDim)!;
    const value = (await readArrayRegion(store, t.name, t.array, [[req.record!, req.record! + 1]]))[0]!;
    when = `  ${formatTime(value, axis!.units, axis!.calendar)}  [${req.record}]`;
  }
  for (const [d, k] of Object.entries(fixed)) sel[a.dims.indexOf(d)] = [k, k + 1];
  const shown = a.dims.filter((d) => !(d in fixed));
  checkShown(req.variable, shown);
  const values = toFloat64(await readArrayRegion(store, a.name, a.array, sel));
  const lengths = shown.map((d) => a.array.shape[a.dims.indexOf(d)]!);
  const units = str(a.attributes.units) ?? "";
  const name = str(a.attributes.long_name) ?? req.variable;
  const slices = Object.entries(req.slices ?? {})
    .map(([d, k]) => `  ${d}=${k}`)
    .join("");
  const title = `${name}${units ? ` (${units})` : ""}${when}${slices}`;
  const axes = await Promise.all(shown.map((d, i) => coordinate(store, arrays, d, lengths[i]!)));
  return renderSlice(values, lengths, axes, title, units);
}

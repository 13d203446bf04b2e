import { intOption, UsageError } from "../command-line.js";
import { colormapNames, DEFAULT_CMAP, isColormap } from "../picture/colormap.js";
import { MAX_SIZE, MIN_SIZE, type PictureOptions, type PictureSize, type Slice } from "../picture/options.js";
import type { PlotRequest } from "./plot.js";

// ---------------------------------------------------------------------------------------------------
// `zstream plot`: every option it takes, and how the parsed values become a PlotRequest. An option is
// added here (declaration, conversion) and in HELP.plot of help.ts; cli.ts only calls these two.
// The picture options (--vmin, --vmax, --cmap, --size, --series, --slice dim=a:b) are declared here too.
// ---------------------------------------------------------------------------------------------------

export const PLOT_OPTIONS = {
  var: { type: "string" },
  record: { type: "string" },
  slice: { type: "string", multiple: true },
  out: { type: "string" },
  series: { type: "boolean" },
  // a negative --vmin/--vmax is taken as given (--vmin -5): parseCommand joins it to its option
  vmin: { type: "string" },
  vmax: { type: "string" },
  cmap: { type: "string" },
  size: { type: "string" },
} as const;

export interface PlotValues {
  var?: string;
  record?: string;
  slice?: string[];
  out?: string;
  series?: boolean;
  vmin?: string;
  vmax?: string;
  cmap?: string;
  size?: string;
}

/** `--slice dim=k` (one index) and `--slice dim=a:b` (indices a to b-1), each dim at most once. */
export function parseSlices(list: string[] | undefined): Record<string, Slice> {
  const out: Record<string, Slice> = {};
  for (const s of list ?? []) {
    const m = /^([^=]+)=(\d+)(?::(\d+))?$/.exec(s);
    if (!m)
      throw new UsageError(
        `--slice must be dim=k or dim=a:b with non-negative integers, got ${JSON.stringify(s)}`,
      );
    const dim = m[1]!;
    if (dim in out) throw new UsageError(`--slice ${dim} is given twice`);
    if (m[3] === undefined) out[dim] = Number(m[2]);
    else {
      const [a, b] = [Number(m[2]), Number(m[3])];
      if (!(a < b)) throw new UsageError(`--slice ${dim}=${a}:${b} is empty: a range a:b needs a < b`);
      out[dim] = [a, b];
    }
  }
  return out;
}

function number(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim() === "" ? Number.NaN : Number(value);
  if (!Number.isFinite(v))
    throw new UsageError(`--${name} must be a finite number, got ${JSON.stringify(value)}`);
  return v;
}

function size(value: string | undefined): PictureSize | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+)(?:x(\d+))?$/.exec(value);
  const dims = m ? [Number(m[1]), ...(m[2] === undefined ? [] : [Number(m[2])])] : [];
  if (!m || dims.some((d) => d < MIN_SIZE || d > MAX_SIZE))
    throw new UsageError(
      `--size must be WIDTH or WIDTHxHEIGHT in pixels, each ${MIN_SIZE}..${MAX_SIZE}, got ${JSON.stringify(value)}`,
    );
  return dims.length === 2 ? { width: dims[0]!, height: dims[1]! } : { width: dims[0]! };
}

/** Picture options from parsed command-line values; UsageError names the option at fault. */
export function pictureOptions(values: Pick<PlotValues, "vmin" | "vmax" | "cmap" | "size">): PictureOptions {
  const vmin = number(values.vmin, "vmin");
  const vmax = number(values.vmax, "vmax");
  if (vmin !== undefined && vmax !== undefined && !(vmin < vmax))
    throw new UsageError(`--vmin ${vmin} must be below --vmax ${vmax}`);
  const cmap = values.cmap ?? DEFAULT_CMAP;
  if (!isColormap(cmap))
    throw new UsageError(
      `--cmap ${JSON.stringify(cmap)} is not a colour map; one of ${colormapNames().join(", ")} (add _r to reverse)`,
    );
  const s = size(values.size);
  return {
    cmap,
    ...(vmin === undefined ? {} : { vmin }),
    ...(vmax === undefined ? {} : { vmax }),
    ...(s === undefined ? {} : { size: s }),
  };
}

/** The request and the default output file name; every malformed option is a UsageError naming it. */
export function plotRequestOf(values: PlotValues): { request: PlotRequest; defaultOut: string } {
  if (values.var === undefined || values.var === "") throw new UsageError("plot needs --var V");
  const record = values.record === undefined ? undefined : intOption(values.record, "record", 0, 0);
  const series = values.series === true;
  if (series && record !== undefined)
    throw new UsageError("--series plots every committed record: it takes no --record");
  const slices = parseSlices(values.slice);
  const picture = pictureOptions(values);
  const which = series ? "-series" : record === undefined ? "" : `-${record}`;
  return {
    request: {
      variable: values.var,
      ...(record === undefined ? {} : { record }),
      slices,
      ...(series ? { series } : {}),
      ...picture,
    },
    defaultOut: `${values.var.replaceAll("/", "_")}${which}.png`,
  };
}

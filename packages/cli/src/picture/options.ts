/**
 * The picture options of `zstream plot`, declared and parsed in one place: the command spreads
 * PICTURE_OPTIONS into its parseArgs options and hands the values to pictureOptions / parseSlices.
 */
import { UsageError } from "../args.js";
import { colormapNames, DEFAULT_CMAP, isColormap } from "./colormap.js";

export const PICTURE_OPTIONS = {
  vmin: { type: "string" },
  vmax: { type: "string" },
  cmap: { type: "string" },
  size: { type: "string" },
  series: { type: "boolean" },
} as const;

export interface PictureSize {
  width: number;
  /** Absent: from the data's aspect (a heatmap) or half the width (a line). */
  height?: number;
}

export interface PictureOptions {
  /** The colour range of a heatmap, the value axis of a line plot; absent ends come from the data. */
  vmin?: number;
  vmax?: number;
  cmap: string;
  size?: PictureSize;
}

/** A --slice: one index (the dim is dropped), or a half-open index range [start, stop) kept. */
export type Slice = number | readonly [number, number];

export const MIN_SIZE = 120;
export const MAX_SIZE = 10000;

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
export function pictureOptions(values: {
  vmin?: string;
  vmax?: string;
  cmap?: string;
  size?: string;
}): PictureOptions {
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

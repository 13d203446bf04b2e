/**
 * Colour maps from d3-scale-chromatic: the matplotlib perceptually uniform maps (viridis, magma,
 * inferno, plasma, cividis), turbo, and the ColorBrewer sequential and diverging schemes, by their d3
 * names without "interpolate", any case; a trailing "_r" reverses one, as in matplotlib ("RdBu_r").
 */
import { color } from "d3-color";
import * as chromatic from "d3-scale-chromatic";
import type { Rgb } from "./svg.js";

export const DEFAULT_CMAP = "viridis";

/** Cells with no finite value (NaN, ±Inf): the viewer's grey, which the usual maps do not produce. */
export const MISSING: Rgb = [160, 160, 160];

const INTERPOLATORS = new Map<string, (t: number) => string>(
  Object.entries(chromatic)
    .filter(([k, v]) => k.startsWith("interpolate") && typeof v === "function")
    .map(([k, v]) => [k.slice("interpolate".length).toLowerCase(), v as (t: number) => string]),
);

/** Every name --cmap takes (without the "_r" variants). */
export function colormapNames(): string[] {
  return [...INTERPOLATORS.keys()].sort();
}

export function isColormap(name: string): boolean {
  return INTERPOLATORS.has(name.toLowerCase().replace(/_r$/, ""));
}

/** Steps in a colour map's table: matplotlib's default too, and finer than a colour bar shows. */
const STEPS = 256;

export interface Colormap {
  name: string;
  /** The colour at fraction u of the range, u clamped to [0, 1]; MISSING for NaN. */
  at(u: number): Rgb;
}

/** The named map, sampled once into a table: a large field then costs a lookup per cell. */
export function colormap(name: string): Colormap {
  const key = name.toLowerCase();
  const reversed = key.endsWith("_r");
  const interpolate = INTERPOLATORS.get(reversed ? key.slice(0, -2) : key);
  if (interpolate === undefined) throw new RangeError(`unknown colour map ${JSON.stringify(name)}`);
  const table: Rgb[] = Array.from({ length: STEPS }, (_, i) => {
    const c = color(interpolate(reversed ? 1 - i / (STEPS - 1) : i / (STEPS - 1)))!.rgb();
    return [Math.round(c.r), Math.round(c.g), Math.round(c.b)] as const;
  });
  return {
    name,
    at(u: number): Rgb {
      if (!Number.isFinite(u)) return MISSING;
      return table[Math.min(STEPS - 1, Math.max(0, Math.floor(u * STEPS)))]!;
    },
  };
}

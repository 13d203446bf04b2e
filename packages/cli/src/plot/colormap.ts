import type { Rgb } from "./canvas.js";

/** Viridis sampled at nine evenly spaced stops: perceptually uniform and readable in greyscale. */
const STOPS: Rgb[] = [
  [68, 1, 84],
  [72, 40, 120],
  [62, 73, 137],
  [49, 104, 142],
  [38, 130, 142],
  [31, 158, 137],
  [53, 183, 121],
  [110, 206, 88],
  [253, 231, 37],
];

/** Colour of u in [0, 1] (clamped), linearly interpolated between stops. */
export function viridis(u: number): Rgb {
  const x = Math.min(1, Math.max(0, Number.isFinite(u) ? u : 0)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const a = STOPS[i]!;
  const b = STOPS[i + 1]!;
  return [0, 1, 2].map((k) => Math.round(a[k]! + (b[k]! - a[k]!) * f)) as unknown as Rgb;
}

export const COLORMAP_ENDS = { low: STOPS[0]!, high: STOPS[STOPS.length - 1]! };

/** Viridis sampled at nine evenly spaced stops (perceptually uniform, readable in greyscale). */
const VIRIDIS: readonly (readonly [number, number, number])[] = [
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

/** Cells with no finite value (NaN, ±Inf) are drawn in this grey, which viridis never produces. */
export const MISSING_RGB: readonly [number, number, number] = [160, 160, 160];

/** The colour at fraction f in [0, 1] (clamped), linearly interpolated between the stops. */
export function colorAt(f: number): [number, number, number] {
  if (!Number.isFinite(f)) return [...MISSING_RGB];
  const x = Math.min(1, Math.max(0, f)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const w = x - i;
  const a = VIRIDIS[i]!;
  const b = VIRIDIS[i + 1]!;
  return [0, 1, 2].map((k) => Math.round(a[k]! + (b[k]! - a[k]!) * w)) as [number, number, number];
}

/** Where v sits in [min, max]; a flat range maps everything to the middle colour. */
export function fraction(v: number, min: number, max: number): number {
  if (!Number.isFinite(v)) return Number.NaN;
  if (!(max > min)) return 0.5;
  return (v - min) / (max - min);
}

/** Smallest and largest finite value, or undefined when there is none. */
export function finiteRange(data: ArrayLike<number>): { min: number; max: number } | undefined {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (!Number.isFinite(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return min <= max ? { min, max } : undefined;
}

/**
 * RGBA pixels of an ny x nx C-order grid, one pixel per cell. With `flipY` row 0 of the data is drawn at
 * the bottom (an increasing latitude then reads north-up).
 */
export function paintGrid(
  data: ArrayLike<number>,
  ny: number,
  nx: number,
  min: number,
  max: number,
  flipY: boolean,
): Uint8ClampedArray<ArrayBuffer> {
  const out = new Uint8ClampedArray(ny * nx * 4);
  for (let row = 0; row < ny; row++) {
    const y = flipY ? ny - 1 - row : row;
    for (let col = 0; col < nx; col++) {
      const [r, g, b] = colorAt(fraction(data[row * nx + col]!, min, max));
      const p = (y * nx + col) * 4;
      out[p] = r;
      out[p + 1] = g;
      out[p + 2] = b;
      out[p + 3] = 255;
    }
  }
  return out;
}

/** About `count` round tick values (1, 2 or 5 times a power of ten apart) inside [min, max]. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (!(max > min)) return [min];
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const ticks: number[] = [];
  for (let k = Math.ceil(min / step); k * step <= max + step * 1e-9; k++) {
    // k * step, not repeated addition, so 0.1-steps do not drift to 0.30000000000000004.
    ticks.push(Number((k * step).toPrecision(12)));
  }
  return ticks;
}

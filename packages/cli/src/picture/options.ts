/**
 * What a picture is drawn with. The command-line options that set these are declared and parsed with
 * the rest of `zstream plot`'s in plot/options.ts.
 */

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

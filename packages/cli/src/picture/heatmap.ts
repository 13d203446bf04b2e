import { PNG } from "pngjs";
import { colormap } from "./colormap.js";
import {
  DEFAULT_WIDTH,
  drawTitle,
  drawXAxis,
  drawYAxis,
  finish,
  fitText,
  metrics,
  type Picture,
  type Rect,
  spacedTicks,
  titleHeight,
  widest,
  xAxisHeight,
  yAxisWidth,
} from "./frame.js";
import type { PictureOptions } from "./options.js";
import { measureText } from "./resvg.js";
import { css, Svg } from "./svg.js";
import { niceDomain, numberTicks, type Tick } from "./ticks.js";

export interface AxisSpec {
  /** The axis name as shown: "latitude (°N)". */
  label: string;
  /** One coordinate value per cell, when the store has a coordinate array for the dim. */
  coords?: Float64Array;
  /** The north-south axis: drawn with north up. */
  latitude?: boolean;
  /** CF `positive: down` (depth, pressure): values increase downward. */
  down?: boolean;
  /** Without coordinates: the index of the first cell (a range slice starts past 0). */
  offset?: number;
}

export interface HeatmapInput {
  /** Row-major: `ny` rows along `y`, `nx` columns along `x`. */
  values: Float64Array;
  ny: number;
  nx: number;
  y: AxisSpec;
  x: AxisSpec;
  title: string;
  subtitle?: string;
  /** The colour bar's label (units). */
  label: string;
}

/**
 * How an axis is drawn: the value range its cells cover, whether the cells are drawn in reverse index
 * order, and whether the values are indices (whole-number ticks).
 */
interface Placement {
  lo: number;
  hi: number;
  reverse: boolean;
  index: boolean;
  /** Vertical axes: values increase upward. */
  up: boolean;
}

function strictlyMonotonic(c: Float64Array): 1 | -1 | 0 {
  if (c.length < 2 || !c.every(Number.isFinite)) return 0;
  const sign = Math.sign(c[1]! - c[0]!);
  for (let i = 1; i < c.length; i++) if (Math.sign(c[i]! - c[i - 1]!) !== sign) return 0;
  return sign as 1 | -1 | 0;
}

/**
 * Values increase rightward and upward (downward for `positive: down`). A monotonic coordinate places
 * the cells between half-spacing edges; cells of an irregular grid are drawn equally wide, the ticks
 * then approximate. Without a usable coordinate the axis is the index: rows top to bottom like an
 * image, except on a latitude axis, where row 0 is taken to be the southernmost (as model grids store
 * it) and drawn at the bottom, so north is up.
 */
function place(axis: AxisSpec, n: number, vertical: boolean): Placement {
  const c = axis.coords;
  const sign = c === undefined || c.length !== n ? 0 : strictlyMonotonic(c);
  if (c !== undefined && c.length === 1 && n === 1 && Number.isFinite(c[0]))
    return { lo: c[0]! - 0.5, hi: c[0]! + 0.5, reverse: false, index: false, up: axis.down !== true };
  if (sign === 0 || c === undefined) {
    const up = vertical && axis.latitude === true;
    const first = axis.offset ?? 0;
    return { lo: first - 0.5, hi: first + n - 0.5, reverse: up, index: true, up };
  }
  const first = c[0]!;
  const last = c[n - 1]!;
  const a = first - (c[1]! - first) / 2;
  const b = last + (last - c[n - 2]!) / 2;
  const increasing = sign > 0;
  const up = vertical && axis.down !== true;
  // image rows run top to bottom, columns left to right: reverse when the drawing direction opposes the index
  const reverse = vertical ? increasing === up : !increasing;
  return { lo: Math.min(a, b), hi: Math.max(a, b), reverse, index: false, up };
}

function finiteRange(values: Float64Array): [number, number] | undefined {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo > hi ? undefined : [lo, hi];
}

/** The colour range: the options' ends where given, the data's otherwise. */
export function colourRange(
  values: Float64Array,
  opts: Pick<PictureOptions, "vmin" | "vmax">,
): { vmin: number; vmax: number; below: boolean; above: boolean } {
  const data = finiteRange(values) ?? [0, 1];
  let vmin = opts.vmin ?? data[0];
  let vmax = opts.vmax ?? data[1];
  if (opts.vmin === undefined && vmin > vmax) vmin = vmax;
  if (opts.vmax === undefined && vmax < vmin) vmax = vmin;
  return { vmin, vmax, below: data[0] < vmin, above: data[1] > vmax };
}

/** The cells as a PNG, one pixel a cell, in drawing order. */
function cellImage(
  input: HeatmapInput,
  xs: Placement,
  ys: Placement,
  cmap: string,
  lo: number,
  span: number,
): Buffer {
  const { nx, ny, values } = input;
  const map = colormap(cmap);
  const png = new PNG({ width: nx, height: ny });
  for (let r = 0; r < ny; r++) {
    const row = ys.reverse ? ny - 1 - r : r;
    for (let k = 0; k < nx; k++) {
      const col = xs.reverse ? nx - 1 - k : k;
      const [R, G, B] = map.at((values[row * nx + col]! - lo) / span);
      const o = (r * nx + k) * 4;
      png.data[o] = R;
      png.data[o + 1] = G;
      png.data[o + 2] = B;
      png.data[o + 3] = 255;
    }
  }
  return PNG.sync.write(png, { colorType: 6 });
}

/** A heatmap of a 2-D field with ticks on both axes, a colour bar, a title and a subtitle. */
export function renderHeatmap(input: HeatmapInput, opts: PictureOptions): Picture {
  const { nx, ny } = input;
  const xs = place(input.x, nx, false);
  const ys = place(input.y, ny, true);
  const range = colourRange(input.values, opts);
  // a flat field (or range) still needs a span to place colours and ticks: the middle colour, round ticks
  const [cLo, cHi] =
    range.vmin < range.vmax ? [range.vmin, range.vmax] : niceDomain(range.vmin, range.vmax, 2);
  const W = opts.size?.width ?? DEFAULT_WIDTH;
  const m = metrics(W, opts.size?.height ?? Math.round(W * 0.6));
  const top = titleHeight(m, input.subtitle);
  const bottom = xAxisHeight(m, 1);
  const barGap = Math.round(m.font * 1.2);
  const barW = Math.max(8, m.font);
  const aspect = Math.min(3, Math.max(0.2, ny / nx));

  // Margins depend on tick labels, tick counts on the plot's size: guess, then settle in a second pass.
  let yTicks: Tick[] = [];
  let barTicks: Tick[] = [];
  let plot: Rect = { x: 0, y: top, width: W * 0.7, height: 0 };
  let H = 0;
  const yAt = (p: Rect) => (v: number) => {
    const f = (v - ys.lo) / (ys.hi - ys.lo);
    return ys.up ? p.y + p.height - f * p.height : p.y + f * p.height;
  };
  for (let pass = 0; pass < 2; pass++) {
    const plotH = opts.size?.height !== undefined ? opts.size.height - top - bottom : plot.width * aspect;
    yTicks = numberTicks(ys.lo, ys.hi, Math.max(2, Math.floor(plotH / (m.font * 3.5))), ys.index);
    barTicks = numberTicks(cLo, cHi, Math.max(2, Math.floor(plotH / (m.font * 3))));
    const left = yAxisWidth(
      m,
      widest(
        yTicks.map((t) => t.label),
        m.font,
      ),
    );
    const unitsRoom = input.label === "" ? 0 : Math.round(m.font * 0.4) + m.line;
    const right =
      barGap +
      barW +
      m.tick +
      3 +
      widest(
        barTicks.map((t) => t.label),
        m.font,
      ) +
      unitsRoom +
      m.pad;
    const width = Math.max(20, W - left - right);
    const height =
      opts.size?.height !== undefined
        ? Math.max(20, opts.size.height - top - bottom)
        : Math.round(width * aspect);
    plot = { x: left, y: top, width, height };
    H = opts.size?.height ?? top + height + bottom;
  }
  const xAt = (v: number) => plot.x + ((v - xs.lo) / (xs.hi - xs.lo)) * plot.width;
  const yPos = yAt(plot);
  const xTicks = spacedTicks(
    (count) => numberTicks(xs.lo, xs.hi, count, xs.index),
    xAt,
    Math.max(2, Math.floor(plot.width / (m.font * 5))),
    (t) => measureText(t.label[0]!, m.font).width,
    m.font,
  );
  yTicks = spacedTicks(
    (count) => numberTicks(ys.lo, ys.hi, count, ys.index),
    yPos,
    Math.max(2, Math.floor(plot.height / (m.font * 3))),
    () => m.line,
    0,
  );

  const svg = new Svg(W, H);
  const span = cHi - cLo;
  const png = cellImage(input, xs, ys, opts.cmap, cLo, span);
  svg.image(plot.x, plot.y, plot.width, plot.height, png, plot.width >= nx && plot.height >= ny);
  svg.rect(plot.x - 0.5, plot.y - 0.5, plot.width + 1, plot.height + 1, { stroke: "#000" });
  drawXAxis(svg, m, plot, xTicks, xAt, input.x.label);
  drawYAxis(svg, m, plot, yTicks, yPos, input.y.label);

  // colour bar: the map from low (bottom) to high, one pixel row a step
  const bar: Rect = { x: plot.x + plot.width + barGap, y: plot.y, width: barW, height: plot.height };
  const map = colormap(opts.cmap);
  const rows = Math.max(1, Math.round(bar.height));
  const strip = new PNG({ width: 1, height: rows });
  for (let r = 0; r < rows; r++) {
    const [R, G, B] = map.at(1 - (r + 0.5) / rows);
    strip.data.set([R, G, B, 255], r * 4);
  }
  svg.image(bar.x, bar.y, bar.width, bar.height, PNG.sync.write(strip, { colorType: 6 }), true);
  svg.rect(bar.x - 0.5, bar.y - 0.5, bar.width + 1, bar.height + 1, { stroke: "#000" });
  // data beyond --vmin/--vmax: a triangle past that end of the bar in its end colour, as matplotlib's "extend"
  const tri = Math.min(bar.width, Math.round(bar.height * 0.08));
  if (range.below && tri > 2) {
    const b = bar.y + bar.height + 1;
    svg.polygon(
      [
        [bar.x - 0.5, b],
        [bar.x + bar.width + 0.5, b],
        [bar.x + bar.width / 2, b + tri],
      ],
      { fill: css(map.at(0)), stroke: "#000" },
    );
  }
  if (range.above && tri > 2) {
    const t = bar.y - 1;
    svg.polygon(
      [
        [bar.x - 0.5, t],
        [bar.x + bar.width + 0.5, t],
        [bar.x + bar.width / 2, t - tri],
      ],
      { fill: css(map.at(1)), stroke: "#000" },
    );
  }
  const barAt = (v: number) => bar.y + bar.height - ((v - cLo) / span) * bar.height;
  let labelRight = bar.x + bar.width;
  for (const t of barTicks) {
    const y = Math.round(barAt(t.value)) + 0.5;
    svg.line(bar.x + bar.width, y, bar.x + bar.width + m.tick, y);
    const x = bar.x + bar.width + m.tick + 3;
    svg.text(x, y + Math.round(m.font * 0.36), t.label[0]!, { size: m.font });
    labelRight = Math.max(labelRight, x + measureText(t.label[0]!, m.font).width);
  }
  if (input.label !== "") {
    const fitted = fitText(input.label, m.font, bar.height);
    svg.text(
      labelRight + Math.round(m.font * 0.4) + Math.round(m.font * 0.95),
      bar.y + bar.height / 2,
      fitted.text,
      {
        size: fitted.size,
        anchor: "middle",
        rotate: -90,
      },
    );
  }
  const titleBox = drawTitle(svg, m, plot, input.title, input.subtitle);
  return finish(svg, { vmin: range.vmin, vmax: range.vmax, plot, titleBox });
}

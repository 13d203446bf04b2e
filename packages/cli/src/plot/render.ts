import { BLACK, Canvas, GREY, type Rgb } from "./canvas.js";
import { viridis } from "./colormap.js";
import { textWidth } from "./font.js";
import { formatLabel } from "./labels.js";

export interface Axis {
  name: string;
  /** Coordinate values along the axis, when the store has a coordinate array for the dim. */
  coords?: Float64Array;
  units?: string;
}

export interface RenderResult {
  png: Buffer;
  width: number;
  height: number;
  /** Finite data range mapped to the colour bar (heatmap) or the y axis (line). */
  vmin: number;
  vmax: number;
  /** Where the data sits in the image: the plot area in pixels. */
  plot: { x: number; y: number; width: number; height: number };
}

const TITLE_Y = 8;
const MARGIN = { left: 80, top: 60, right: 120, bottom: 48 };

function finiteRange(values: Float64Array): [number, number] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) return [0, 1];
  return [lo, hi];
}

/** Pixels for n data cells: whole-pixel blocks up to ~720 px, nearest-neighbour beyond 1440 cells. */
function extent(n: number): number {
  if (n <= 720) return n * Math.max(1, Math.floor(720 / n));
  return Math.min(n, 1440);
}

function axisLabel(axis: Axis, i: number): string {
  const v = axis.coords?.[i];
  return v === undefined ? String(i) : formatLabel(v);
}

function titleScale(title: string, width: number): number {
  return textWidth(title, 2) <= width - 20 ? 2 : 1;
}

function drawTitle(c: Canvas, title: string): void {
  const s = titleScale(title, c.width);
  c.text(Math.max(10, Math.floor((c.width - textWidth(title, s)) / 2)), TITLE_Y, title, BLACK, s);
}

/** A heatmap of a 2-D field: rows along `y`, columns along `x`, with a colour bar and labels. */
export function renderHeatmap(
  values: Float64Array,
  ny: number,
  nx: number,
  y: Axis,
  x: Axis,
  title: string,
  units: string,
): RenderResult {
  let w = extent(nx);
  let h = Math.round((ny * w) / nx);
  if (h > 720) {
    h = extent(ny) > 720 ? 720 : extent(ny);
    w = Math.max(60, Math.round((nx * h) / ny));
  }
  h = Math.max(h, 60);
  const width = MARGIN.left + w + MARGIN.right;
  const height = MARGIN.top + h + MARGIN.bottom;
  const c = new Canvas(width, height);
  const [vmin, vmax] = finiteRange(values);
  const span = vmax > vmin ? vmax - vmin : 1;
  // North up: a coordinate that increases with the row index is drawn bottom to top.
  const flip = y.coords !== undefined && y.coords.length > 1 && y.coords[y.coords.length - 1]! > y.coords[0]!;
  for (let py = 0; py < h; py++) {
    const rowPos = Math.min(ny - 1, Math.floor((py * ny) / h));
    const row = flip ? ny - 1 - rowPos : rowPos;
    for (let px = 0; px < w; px++) {
      const col = Math.min(nx - 1, Math.floor((px * nx) / w));
      const v = values[row * nx + col]!;
      c.setPixel(MARGIN.left + px, MARGIN.top + py, Number.isFinite(v) ? viridis((v - vmin) / span) : GREY);
    }
  }
  c.strokeRect(MARGIN.left - 1, MARGIN.top - 1, w + 2, h + 2, BLACK);
  drawTitle(c, title);

  const top = flip ? ny - 1 : 0;
  const bottom = flip ? 0 : ny - 1;
  const lx = (s: string) => MARGIN.left - 8 - textWidth(s, 2);
  c.text(lx(axisLabel(y, top)), MARGIN.top, axisLabel(y, top));
  c.text(lx(axisLabel(y, bottom)), MARGIN.top + h - 14, axisLabel(y, bottom));
  // above the axis, between title and plot: a horizontal name would not fit beside the plot
  c.text(4, MARGIN.top - 20, y.name);
  const xy = MARGIN.top + h + 8;
  c.text(MARGIN.left, xy, axisLabel(x, 0));
  const last = axisLabel(x, nx - 1);
  c.text(MARGIN.left + w - textWidth(last, 2), xy, last);
  c.text(MARGIN.left + Math.floor((w - textWidth(x.name, 2)) / 2), xy + 18, x.name);

  const barX = MARGIN.left + w + 16;
  const barW = 18;
  for (let py = 0; py < h; py++)
    c.fillRect(barX, MARGIN.top + py, barW, 1, viridis(1 - py / Math.max(1, h - 1)));
  c.strokeRect(barX - 1, MARGIN.top - 1, barW + 2, h + 2, BLACK);
  const labelX = barX + barW + 6;
  c.text(labelX, MARGIN.top, formatLabel(vmax));
  c.text(labelX, MARGIN.top + Math.floor(h / 2) - 7, formatLabel((vmin + vmax) / 2));
  c.text(labelX, MARGIN.top + h - 14, formatLabel(vmin));
  if (units !== "")
    c.text(barX, MARGIN.top + h + 8, units, BLACK, textWidth(units, 2) <= MARGIN.right - 4 ? 2 : 1);
  return {
    png: c.toPng(),
    width,
    height,
    vmin,
    vmax,
    plot: { x: MARGIN.left, y: MARGIN.top, width: w, height: h },
  };
}

const LINE: Rgb = [31, 119, 180];

/** A line plot of a 1-D series against its coordinate (or index). */
export function renderLine(values: Float64Array, x: Axis, title: string, units: string): RenderResult {
  const w = 720;
  const h = 360;
  const width = MARGIN.left + w + 40;
  const height = MARGIN.top + h + MARGIN.bottom;
  const c = new Canvas(width, height);
  const [vmin, vmax] = finiteRange(values);
  const span = vmax > vmin ? vmax - vmin : 1;
  const n = values.length;
  const px = (i: number) => MARGIN.left + (n > 1 ? (i * (w - 1)) / (n - 1) : (w - 1) / 2);
  const py = (v: number) => MARGIN.top + (h - 1) - ((v - vmin) / span) * (h - 1);
  c.strokeRect(MARGIN.left - 1, MARGIN.top - 1, w + 2, h + 2, BLACK);
  for (let i = 0; i < n; i++) {
    const v = values[i]!;
    const next = values[i + 1];
    if (!Number.isFinite(v)) continue;
    if (next !== undefined && Number.isFinite(next)) c.line(px(i), py(v), px(i + 1), py(next), LINE);
    else c.setPixel(Math.round(px(i)), Math.round(py(v)), LINE);
  }
  drawTitle(c, title);
  const ly = (s: string) => MARGIN.left - 8 - textWidth(s, 2);
  c.text(ly(formatLabel(vmax)), MARGIN.top, formatLabel(vmax));
  c.text(ly(formatLabel(vmin)), MARGIN.top + h - 14, formatLabel(vmin));
  if (units !== "")
    c.text(
      Math.max(2, ly(units)),
      MARGIN.top + Math.floor(h / 2) - 7,
      units,
      BLACK,
      textWidth(units, 2) <= MARGIN.left - 10 ? 2 : 1,
    );
  const xy = MARGIN.top + h + 8;
  c.text(MARGIN.left, xy, axisLabel(x, 0));
  const last = axisLabel(x, n - 1);
  c.text(MARGIN.left + w - textWidth(last, 2), xy, last);
  c.text(MARGIN.left + Math.floor((w - textWidth(x.name, 2)) / 2), xy + 18, x.name);
  return {
    png: c.toPng(),
    width,
    height,
    vmin,
    vmax,
    plot: { x: MARGIN.left, y: MARGIN.top, width: w, height: h },
  };
}

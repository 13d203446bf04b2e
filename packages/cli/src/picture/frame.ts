/** What every plot shares: type sizes, the title block, axes with ticks, and the rasterized result. */
import { measureText, rasterize } from "./resvg.js";
import type { Svg } from "./svg.js";
import type { Tick } from "./ticks.js";

export const DEFAULT_WIDTH = 900;

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Picture {
  svg: string;
  png: Buffer;
  width: number;
  height: number;
  /** The colour range (heatmap) or value-axis range (line) the picture uses. */
  vmin: number;
  vmax: number;
  /** Where the data is drawn, in pixels. */
  plot: Rect;
  /** The title as drawn: its text, font size and baseline anchor (the middle of the text). */
  titleBox: { text: string; size: number; x: number; y: number };
}

/** Type sizes and spacing that scale with the picture, so a thumbnail and a poster both read. */
export interface Metrics {
  font: number;
  titleFont: number;
  pad: number;
  tick: number;
  line: number;
}

export function metrics(width: number, height: number): Metrics {
  const font = Math.max(8, Math.min(15, Math.round(Math.min(width / 64, height / 26))));
  return {
    font,
    titleFont: Math.round(font * 1.2),
    pad: Math.round(font * 0.8),
    tick: Math.max(3, Math.round(font * 0.4)),
    line: Math.round(font * 1.25),
  };
}

export function widest(labels: string[][], size: number): number {
  let w = 0;
  for (const lines of labels) for (const s of lines) w = Math.max(w, measureText(s, size).width);
  return w;
}

/**
 * The largest size from `size` down to 80 % of it at which `text` fits `room` px, and the text itself,
 * cut with an ellipsis when even that is too wide (a long name on a thumbnail).
 */
export function fitText(text: string, size: number, room: number): { text: string; size: number } {
  for (let s = size; s >= Math.floor(size * 0.8); s--) {
    if (measureText(text, s).width <= room) return { text, size: s };
  }
  const s = Math.floor(size * 0.8);
  const chars = [...text];
  let lo = 0;
  let hi = chars.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (measureText(`${chars.slice(0, mid).join("")}…`, s).width <= room) lo = mid;
    else hi = mid - 1;
  }
  return { text: `${chars.slice(0, lo).join("").trimEnd()}…`, size: s };
}

/** Height of the title block (title, optional subtitle) and the padding around it. */
export function titleHeight(m: Metrics, subtitle: string | undefined): number {
  return m.pad + Math.round(m.titleFont * 1.2) + (subtitle ? m.line : 0) + m.pad;
}

/** Title and subtitle centred over the plot, kept inside the picture. */
export function drawTitle(
  svg: Svg,
  m: Metrics,
  plot: Rect,
  title: string,
  subtitle: string | undefined,
): Picture["titleBox"] {
  const room = svg.width - 2 * m.pad;
  const centre = (w: number) =>
    Math.min(Math.max(plot.x + plot.width / 2, m.pad + w / 2), svg.width - m.pad - w / 2);
  const t = fitText(title, m.titleFont, room);
  const ty = m.pad + Math.round(m.titleFont * 0.95);
  const tx = centre(measureText(t.text, t.size).width);
  svg.text(tx, ty, t.text, { size: t.size, anchor: "middle" });
  if (subtitle) {
    const s = fitText(subtitle, m.font, room);
    svg.text(centre(measureText(s.text, s.size).width), ty + m.line, s.text, {
      size: s.size,
      anchor: "middle",
      fill: "#333",
    });
  }
  return { text: t.text, size: t.size, x: tx, y: ty };
}

/** Room under the plot for x tick labels of `lines` lines and the axis name. */
export function xAxisHeight(m: Metrics, lines: number): number {
  return m.tick + 3 + lines * m.line + Math.round(m.font * 0.3) + m.line + m.pad;
}

/** Room left of the plot for y tick labels `labelWidth` wide and the rotated axis name. */
export function yAxisWidth(m: Metrics, labelWidth: number): number {
  return m.pad + m.line + Math.round(m.font * 0.4) + labelWidth + 3 + m.tick;
}

/** Tick marks, labels and the axis name under the plot; `at` maps a tick value to x. */
export function drawXAxis(
  svg: Svg,
  m: Metrics,
  plot: Rect,
  ticks: Tick[],
  at: (v: number) => number,
  name: string,
) {
  const bottom = plot.y + plot.height;
  let lines = 1;
  for (const t of ticks) {
    const x = Math.round(at(t.value)) + 0.5;
    svg.line(x, bottom, x, bottom + m.tick);
    t.label.forEach((s, i) => {
      // a label at the plot's edge is moved in so that it is not cut by the picture's
      const half = measureText(s, m.font).width / 2 + 2;
      const lx = Math.min(Math.max(x, half), svg.width - half);
      svg.text(lx, bottom + m.tick + 3 + Math.round(m.font * 0.95) + i * m.line, s, {
        size: m.font,
        anchor: "middle",
      });
    });
    lines = Math.max(lines, t.label.length);
  }
  const nameY = bottom + m.tick + 3 + lines * m.line + Math.round(m.font * 0.3) + Math.round(m.font * 0.95);
  const fitted = fitText(name, m.font, svg.width - 2 * m.pad);
  svg.text(plot.x + plot.width / 2, nameY, fitted.text, { size: fitted.size, anchor: "middle" });
}

/** Tick marks, labels and the rotated axis name left of the plot; `at` maps a tick value to y. */
export function drawYAxis(
  svg: Svg,
  m: Metrics,
  plot: Rect,
  ticks: Tick[],
  at: (v: number) => number,
  name: string,
) {
  for (const t of ticks) {
    const y = Math.round(at(t.value)) + 0.5;
    svg.line(plot.x - m.tick, y, plot.x, y);
    svg.text(plot.x - m.tick - 3, y + Math.round(m.font * 0.36), t.label[0]!, {
      size: m.font,
      anchor: "end",
    });
  }
  const fitted = fitText(name, m.font, plot.height);
  svg.text(m.pad + Math.round(m.font * 0.95), plot.y + plot.height / 2, fitted.text, {
    size: fitted.size,
    anchor: "middle",
    rotate: -90,
  });
}

/** Ticks too close for their labels: keep asking for fewer until neighbours clear each other. */
export function spacedTicks(
  make: (count: number) => Tick[],
  at: (v: number) => number,
  start: number,
  labelExtent: (t: Tick) => number,
  gap: number,
): Tick[] {
  let ticks = make(start);
  for (let count = start; count > 1; count = Math.min(count - 1, Math.floor(count * 0.7))) {
    ticks = make(count);
    const clear = ticks.every(
      (t, i) =>
        i === 0 ||
        Math.abs(at(t.value) - at(ticks[i - 1]!.value)) >=
          (labelExtent(t) + labelExtent(ticks[i - 1]!)) / 2 + gap,
    );
    if (clear) return ticks;
  }
  return ticks;
}

export function finish(svg: Svg, rest: Omit<Picture, "svg" | "png" | "width" | "height">): Picture {
  const text = svg.toString();
  return { svg: text, png: rasterize(text), width: svg.width, height: svg.height, ...rest };
}

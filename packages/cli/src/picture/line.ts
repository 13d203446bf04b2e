import {
  DEFAULT_WIDTH,
  drawTitle,
  drawXAxis,
  drawYAxis,
  finish,
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
import { Svg } from "./svg.js";
import { niceDomain, numberTicks, type Tick, timeTicks } from "./ticks.js";

export interface LineInput {
  /** x of each point: coordinate values, indices, or (`time`) milliseconds since 1970 UTC. */
  x: Float64Array;
  y: Float64Array;
  xLabel: string;
  /** x holds instants: calendar ticks. */
  time?: boolean;
  /** x holds indices: whole-number ticks. */
  integers?: boolean;
  /** Labels of the numeric x ticks (a time axis in a calendar a Date cannot count). */
  xTickLabels?: (values: number[]) => string[][];
  yLabel: string;
  title: string;
  subtitle?: string;
}

/** matplotlib's first colour: the line a reader of climate plots expects. */
export const LINE_COLOUR = "#1f77b4";
/** Points are marked as well when there are few enough to see one by one. */
const MARKERS_UP_TO = 60;

function range(a: Float64Array): [number, number] | undefined {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const v of a) {
    if (!Number.isFinite(v)) continue;
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  return lo > hi ? undefined : [lo, hi];
}

/** The value axis: the options' ends where given; otherwise the data's, widened to round ticks. */
function valueDomain(y: Float64Array, opts: PictureOptions): [number, number] {
  const data = range(y) ?? [0, 1];
  const [lo, hi] = niceDomain(data[0], data[1], 6);
  let a = opts.vmin ?? lo;
  let b = opts.vmax ?? hi;
  if (!(a < b)) [a, b] = niceDomain(Math.min(a, b), Math.max(a, b), 6);
  return [a, b];
}

function relabel(ticks: Tick[], labels: LineInput["xTickLabels"]): Tick[] {
  if (labels === undefined) return ticks;
  const text = labels(ticks.map((t) => t.value));
  return ticks.map((t, i) => ({ value: t.value, label: text[i]! }));
}

/** A line plot of y against x with gridlines; non-finite values break the line. */
export function renderLine(input: LineInput, opts: PictureOptions): Picture {
  const W = opts.size?.width ?? DEFAULT_WIDTH;
  const H = opts.size?.height ?? Math.round(W / 2);
  const m = metrics(W, H);
  const [vLo, vHi] = valueDomain(input.y, opts);
  const xr = range(input.x) ?? [0, 1];
  const markers = input.y.length <= MARKERS_UP_TO;
  // a single point still needs an axis around it: half an hour of time, half a unit otherwise; marked
  // points get a margin so the first and last are not cut by the frame
  const pad = xr[0] < xr[1] ? (markers ? (xr[1] - xr[0]) * 0.02 : 0) : input.time ? 30 * 60 * 1000 : 0.5;
  const [xLo, xHi] = [xr[0] - pad, xr[1] + pad];
  const top = titleHeight(m, input.subtitle);
  const guessH = H - top - xAxisHeight(m, input.time || input.xTickLabels ? 2 : 1);
  const yTickCount = Math.max(2, Math.floor(guessH / (m.font * 3.5)));
  let yTicks = numberTicks(vLo, vHi, yTickCount);
  const left = yAxisWidth(
    m,
    widest(
      yTicks.map((t) => t.label),
      m.font,
    ),
  );
  const width = Math.max(20, W - left - m.pad * 2);
  const xMake = (count: number): Tick[] =>
    input.time
      ? timeTicks(new Date(xLo), new Date(xHi), count)
      : relabel(numberTicks(xLo, xHi, count, input.integers === true), input.xTickLabels);
  const xAtW = (v: number) => left + ((v - xLo) / (xHi - xLo)) * width;
  const xTicks = spacedTicks(
    xMake,
    xAtW,
    Math.max(2, Math.floor(width / (m.font * (input.time || input.xTickLabels ? 7 : 5)))),
    (t) => Math.max(...t.label.map((s) => measureText(s, m.font).width)),
    m.font,
  );
  const lines = Math.max(1, ...xTicks.map((t) => t.label.length));
  const height = Math.max(20, H - top - xAxisHeight(m, lines));
  const plot: Rect = { x: left, y: top, width, height };
  const xAt = (v: number) => plot.x + ((v - xLo) / (xHi - xLo)) * plot.width;
  const yAt = (v: number) => plot.y + plot.height - ((v - vLo) / (vHi - vLo)) * plot.height;
  yTicks = spacedTicks(
    (count) => numberTicks(vLo, vHi, count),
    yAt,
    yTickCount,
    () => m.line,
    0,
  );

  const svg = new Svg(W, H);
  for (const t of yTicks)
    svg.line(
      plot.x,
      Math.round(yAt(t.value)) + 0.5,
      plot.x + plot.width,
      Math.round(yAt(t.value)) + 0.5,
      "#e6e6e6",
    );
  for (const t of xTicks)
    svg.line(
      Math.round(xAt(t.value)) + 0.5,
      plot.y,
      Math.round(xAt(t.value)) + 0.5,
      plot.y + plot.height,
      "#e6e6e6",
    );
  // values outside --vmin/--vmax are clipped at the frame, as an axis limit clips in any plotting tool
  const clip = (v: number) => Math.min(plot.y + plot.height, Math.max(plot.y, yAt(v)));
  const stroke = Math.max(1, m.font / 8);
  let run: [number, number][] = [];
  const flush = () => {
    if (run.length > 1) svg.polyline(run, LINE_COLOUR, stroke);
    run = [];
  };
  const n = input.y.length;
  for (let i = 0; i < n; i++) {
    const v = input.y[i]!;
    const x = input.x[i]!;
    if (!Number.isFinite(v) || !Number.isFinite(x)) flush();
    else run.push([xAt(x), clip(v)]);
  }
  flush();
  if (markers) {
    for (let i = 0; i < n; i++) {
      const v = input.y[i]!;
      const x = input.x[i]!;
      if (Number.isFinite(v) && Number.isFinite(x)) svg.circle(xAt(x), clip(v), stroke * 1.8, LINE_COLOUR);
    }
  }
  svg.rect(plot.x - 0.5, plot.y - 0.5, plot.width + 1, plot.height + 1, { stroke: "#000" });
  drawXAxis(svg, m, plot, xTicks, xAt, input.xLabel);
  drawYAxis(svg, m, plot, yTicks, yAt, input.yLabel);
  const titleBox = drawTitle(svg, m, plot, input.title, input.subtitle);
  return finish(svg, { vmin: vLo, vmax: vHi, plot, titleBox });
}

/**
 * Axis and colour-bar ticks from d3-scale (round steps of 1, 2 or 5 × 10^k, or calendar steps for
 * time) and their labels from d3-format, with as many digits as the tick step needs, so that ticks of
 * data between 1005.030 and 1005.033 read 1005.0300, 1005.0305, … and never the same text twice.
 */
import { format, precisionFixed, precisionRound } from "d3-format";
import { scaleLinear, scaleUtc } from "d3-scale";
import { utcFormat } from "d3-time-format";

export interface Tick {
  value: number;
  /** One or two lines (a time tick may carry its date under the hour). */
  label: string[];
}

const SUPERSCRIPT: Record<string, string> = {
  "-": "⁻",
  "0": "⁰",
  "1": "¹",
  "2": "²",
  "3": "³",
  "4": "⁴",
  "5": "⁵",
  "6": "⁶",
  "7": "⁷",
  "8": "⁸",
  "9": "⁹",
};

/** "1.5e+7" as "1.5×10⁷": the fonts draw superscripts, and a reader should not have to parse "e+". */
function prettyExponent(s: string): string {
  const m = /^(.*)e([+-])(\d+)$/.exec(s);
  if (!m) return s;
  const exp = `${m[2] === "-" ? "-" : ""}${m[3]}`;
  return `${m[1]}×10${[...exp].map((c) => SUPERSCRIPT[c]).join("")}`;
}

/** Fixed-point labels between 10⁻³ and 10⁶, scientific outside; digits from the step, then added until distinct. */
export function numberLabels(values: number[], step: number): string[] {
  if (values.length === 0) return [];
  const max = Math.max(...values.map(Math.abs));
  const scientific = max >= 1e6 || (max > 0 && max < 1e-3);
  const positive = Number.isFinite(step) && step > 0 ? step : Math.abs(max) || 1;
  let precision = scientific
    ? Math.max(0, precisionRound(positive, max || positive) - 1)
    : precisionFixed(positive);
  for (;;) {
    const f = format(scientific ? `.${precision}e` : `.${precision}f`);
    const labels = values.map((v) => prettyExponent(f(v)));
    if (new Set(labels).size === labels.length || precision >= 20) return labels;
    precision++;
  }
}

/** Up to about `count` round ticks within [lo, hi]; `integers` keeps whole numbers only (array indices). */
export function numberTicks(lo: number, hi: number, count: number, integers = false): Tick[] {
  const scale = scaleLinear().domain([Math.min(lo, hi), Math.max(lo, hi)]);
  let values = scale.ticks(Math.max(1, count));
  if (integers) values = values.filter(Number.isInteger);
  const step = values.length > 1 ? values[1]! - values[0]! : Math.abs(hi - lo);
  return numberLabels(values, step).map((label, i) => ({ value: values[i]!, label: [label] }));
}

/** [lo, hi] widened to round tick values, as an axis of a line plot starts and ends. */
export function niceDomain(lo: number, hi: number, count: number): [number, number] {
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 1e-3;
    return [lo - pad, hi + pad];
  }
  const [a, b] = scaleLinear().domain([lo, hi]).nice(count).domain() as [number, number];
  return [a, b];
}

/** A number in running text (a title, a range): up to 7 significant digits, trailing zeros dropped. */
export const valueLabel = (v: number): string => prettyExponent(format(".7~g")(v));

const year = utcFormat("%Y");
const month = utcFormat("%Y-%m");
const day = utcFormat("%Y-%m-%d");
const minute = utcFormat("%H:%M");
const second = utcFormat("%H:%M:%S");

/**
 * Up to about `count` calendar-aligned ticks between two instants (UTC), labelled ISO-style: years,
 * months or days alone when the ticks fall on their starts, otherwise the time of day with the date
 * under the first tick and under every tick where the date changes.
 */
export function timeTicks(start: Date, end: Date, count: number): Tick[] {
  const dates = scaleUtc().domain([start, end]).ticks(Math.max(1, count));
  const all = (f: (d: Date) => boolean) => dates.every(f);
  const midnight = (d: Date) => d.getUTCHours() === 0 && d.getUTCMinutes() === 0 && d.getUTCSeconds() === 0;
  let labels: string[][];
  if (all((d) => midnight(d) && d.getUTCDate() === 1 && d.getUTCMonth() === 0))
    labels = dates.map((d) => [year(d)]);
  else if (all((d) => midnight(d) && d.getUTCDate() === 1)) labels = dates.map((d) => [month(d)]);
  else if (all(midnight)) labels = dates.map((d) => [day(d)]);
  else {
    const clock = all((d) => d.getUTCSeconds() === 0 && d.getUTCMilliseconds() === 0) ? minute : second;
    labels = dates.map((d, i) =>
      i === 0 || day(d) !== day(dates[i - 1]!) ? [clock(d), day(d)] : [clock(d)],
    );
  }
  return dates.map((d, i) => ({ value: d.getTime(), label: labels[i]! }));
}

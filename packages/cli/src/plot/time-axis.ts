import { type CfDateTime, CfTimeError, type CfUnits, decodeCfTime, parseCfUnits } from "../cf-time.js";

/**
 * The x axis of a time series, decoded with cf-time.ts in the time coordinate's calendar. Where a
 * JavaScript Date counts the same days (proleptic_gregorian; standard from the Gregorian switch on) x
 * holds instants and the ticks fall on calendar steps (d3's scaleUtc); in other calendars (noleap,
 * all_leap, 360_day, julian, standard before 1582-10-15) x is the stored t, ticks are round values of
 * it, and each tick is labelled with the date it decodes to in that calendar. Units that are not CF time
 * units keep the stored t with its units.
 */
export interface TimeAxis {
  x: Float64Array;
  /** x holds milliseconds since 1970 UTC. */
  time: boolean;
  label: string;
  /** Labels of ticks placed on the stored t (calendars a Date cannot count). */
  tickLabels?: (values: number[]) => string[][];
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");
const day = (d: CfDateTime) =>
  `${d.year < 0 ? `-${pad(-d.year, 4)}` : pad(d.year, 4)}-${pad(d.month)}-${pad(d.day)}`;

/** Whether a decoded date lies where the calendar counts days as a proleptic Gregorian Date does. */
function dateCounts(d: CfDateTime): boolean {
  if (d.calendar === "proleptic_gregorian") return true;
  if (d.calendar !== "standard") return false;
  return d.year > 1582 || (d.year === 1582 && (d.month > 10 || (d.month === 10 && d.day >= 15)));
}

function toMillis(d: CfDateTime): number {
  const date = new Date(0);
  date.setUTCFullYear(d.year, d.month - 1, d.day);
  date.setUTCHours(d.hour, d.minute, d.second, Math.floor(d.microsecond / 1000));
  return date.getTime();
}

/** Tick labels in the calendar: the date alone when every tick is at midnight, else the time with the date under it where it changes. */
function calendarLabels(u: CfUnits): (values: number[]) => string[][] {
  return (values) => {
    const dates = values.map((v) => decodeCfTime(v, u));
    const midnight = dates.every(
      (d) => d === undefined || (d.hour === 0 && d.minute === 0 && d.second === 0),
    );
    const withSeconds = dates.some((d) => d !== undefined && d.second !== 0);
    return dates.map((d, i) => {
      if (d === undefined) return [String(values[i])];
      if (midnight) return [day(d)];
      const clock = `${pad(d.hour)}:${pad(d.minute)}${withSeconds ? `:${pad(d.second)}` : ""}`;
      const prev = i > 0 ? dates[i - 1] : undefined;
      return prev === undefined || day(prev) !== day(d) ? [clock, day(d)] : [clock];
    });
  };
}

export function timeAxis(t: number[], dim: string, units: unknown, calendar: unknown): TimeAxis {
  const raw = (): TimeAxis => ({
    x: Float64Array.from(t),
    time: false,
    label: typeof units === "string" && units !== "" ? `${dim} (${units})` : dim,
  });
  if (typeof units !== "string") return raw();
  let u: CfUnits;
  try {
    u = parseCfUnits(units, calendar);
  } catch (e) {
    if (e instanceof CfTimeError) return raw();
    throw e;
  }
  const dates = t.map((v) => decodeCfTime(v, u));
  if (dates.length > 0 && dates.every((d) => d !== undefined && dateCounts(d)))
    return { x: Float64Array.from(dates, (d) => toMillis(d!)), time: true, label: `${dim} (UTC)` };
  return {
    x: Float64Array.from(t),
    time: false,
    label: `${dim} (${u.calendar})`,
    tickLabels: calendarLabels(u),
  };
}

import { CfTimeError, decodeCfTime, formatCfDateTime, parseCfUnits } from "./cf-time.js";

/**
 * "t = 2000-01-02 03:00" for a value with CF time units (seconds shown only when not zero, the calendar
 * named when it is not the standard one), "t = 3600 s" style when the units are not "<unit> since <date>"
 * or the calendar is not one CF names.
 */
export function formatTime(t: number | bigint, units: unknown, calendar?: unknown): string {
  const raw = `t = ${t}${typeof units === "string" && units !== "" ? ` ${units}` : ""}`;
  if (typeof units !== "string") return raw;
  try {
    const u = parseCfUnits(units, calendar);
    const d = decodeCfTime(t, u);
    if (d === undefined) return raw;
    const iso = formatCfDateTime(d);
    const at = iso.indexOf("T");
    const clock = iso.slice(at + 1);
    const shown = clock.length === 8 && clock.endsWith(":00") ? clock.slice(0, 5) : clock;
    return `t = ${iso.slice(0, at)} ${shown}${u.calendar === "standard" ? "" : ` (${u.calendar})`}`;
  } catch (e) {
    if (e instanceof CfTimeError) return raw;
    throw e;
  }
}

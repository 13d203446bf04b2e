/** CF "<unit> since <date>" time units, e.g. "seconds since 2000-01-01 00:00:00". */
const UNIT_SECONDS: Record<string, number> = {
  second: 1,
  seconds: 1,
  s: 1,
  minute: 60,
  minutes: 60,
  hour: 3600,
  hours: 3600,
  h: 3600,
  day: 86400,
  days: 86400,
  d: 86400,
};

/** The instant a CF time value names, or undefined when the units are not "<unit> since <date>". */
export function cfTimeToDate(t: number, units: unknown): Date | undefined {
  if (typeof units !== "string") return undefined;
  const m =
    /^\s*(\w+)\s+since\s+(\d{4}-\d{1,2}-\d{1,2})(?:[ T](\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?\s*(Z|UTC)?\s*$/i.exec(
      units,
    );
  if (!m) return undefined;
  const scale = UNIT_SECONDS[m[1]!.toLowerCase()];
  if (scale === undefined) return undefined;
  const [y, mo, d] = m[2]!.split("-").map(Number) as [number, number, number];
  const [hh = 0, mm = 0, ss = 0] = (m[3] ?? "0:00").split(":").map(Number);
  const epoch = Date.UTC(y, mo - 1, d, hh, mm, 0) + ss * 1000;
  const ms = epoch + t * scale * 1000;
  return Number.isFinite(ms) ? new Date(ms) : undefined;
}

/** "t = 2000-01-02 03:00" for CF units, "t = 3600 s" style otherwise. */
export function formatTime(t: number, units: unknown): string {
  const date = cfTimeToDate(t, units);
  if (date === undefined) return `t = ${t}${typeof units === "string" && units !== "" ? ` ${units}` : ""}`;
  const iso = date.toISOString();
  const seconds = iso.slice(17, 19) === "00" ? "" : iso.slice(16, 19);
  return `t = ${iso.slice(0, 10)} ${iso.slice(11, 16)}${seconds}`;
}

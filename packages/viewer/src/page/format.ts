/** A value for display: integers in full, others to 6 significant digits, exponent form when tiny or huge. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "-Inf";
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(4).replace(/\.?0+e/, "e");
  return String(Number(v.toPrecision(6)));
}

const UNIT_SECONDS: Record<string, number> = {
  s: 1,
  sec: 1,
  second: 1,
  seconds: 1,
  min: 60,
  minute: 60,
  minutes: 60,
  h: 3600,
  hr: 3600,
  hour: 3600,
  hours: 3600,
  d: 86400,
  day: 86400,
  days: 86400,
};

/**
 * CF time: "<unit> since <reference>" becomes an ISO instant (UTC); other units are shown as they are.
 * A reference date without a zone is read as UTC, as CF does.
 */
export function formatTime(t: number | undefined, units: string | undefined): string {
  if (t === undefined) return "t unknown";
  const m = units === undefined ? null : /^\s*(\w+)\s+since\s+(.+?)\s*$/i.exec(units);
  if (m) {
    const scale = UNIT_SECONDS[m[1]!.toLowerCase()];
    let ref = m[2]!.replace(" ", "T");
    if (/^\d{4}-\d{2}-\d{2}$/.test(ref)) ref += "T00:00:00";
    if (!/(Z|[+-]\d{2}:?\d{2})$/.test(ref)) ref += "Z";
    const base = Date.parse(ref);
    if (scale !== undefined && Number.isFinite(base) && Number.isFinite(t)) {
      const ms = base + t * scale * 1000;
      if (Math.abs(ms) < 8.64e15) return `${new Date(ms).toISOString().replace(".000Z", "Z")}`;
    }
  }
  return withUnits(formatValue(t), units);
}

export function withUnits(text: string, units: string | undefined): string {
  return units ? `${text} ${units}` : text;
}

/** The `units` attribute when it is a non-empty string. */
export function unitsOf(attrs: Record<string, unknown> | undefined): string | undefined {
  const u = attrs?.units;
  return typeof u === "string" && u.trim() !== "" ? u : undefined;
}

/**
 * CF time coordinates: "<unit> since <date>[ <time>][ <zone offset>]" decoded in the calendars the CF
 * conventions name (section 4.4.1): standard/gregorian (Julian before 1582-10-15, Gregorian from it),
 * proleptic_gregorian, noleap/365_day, all_leap/366_day, 360_day and julian.
 *
 * Our own module because no JavaScript library does this: the npm registry has no CF time package, and
 * the date libraries there (the built-in Date, Temporal, Luxon, @tubular/time's settable Julian/Gregorian
 * switch) know neither the idealized model calendars (noleap, all_leap, 360_day) nor CF's year numbering.
 * The rules are Python cftime's (num2date), the reference every CF reader follows, and the tests compare
 * this module with cftime itself on a generated table:
 *   - a value is scaled to an integer count of microseconds (float values rounded half to even, and a
 *     result 1 µs off a whole second snapped to it, as cftime does for units of a second and longer);
 *   - the reference time minus its zone offset is UTC; results are UTC;
 *   - standard and julian have no year 0 (1 BC is year -1), proleptic_gregorian and the idealized
 *     calendars have one (ISO 8601's astronomical numbering);
 *   - "months since" only with 360_day (30 days) and "common_years since" only with noleap/365_day.
 */

export type CfCalendar = "standard" | "proleptic_gregorian" | "noleap" | "all_leap" | "360_day" | "julian";

/** CF's calendar names and their aliases, lower case (the attribute's case does not matter). */
const CALENDAR_NAMES: Record<string, CfCalendar> = {
  standard: "standard",
  gregorian: "standard",
  proleptic_gregorian: "proleptic_gregorian",
  noleap: "noleap",
  "365_day": "noleap",
  all_leap: "all_leap",
  "366_day": "all_leap",
  "360_day": "360_day",
  julian: "julian",
};

/** A units or calendar attribute this module cannot decode; the message names which and why. */
export class CfTimeError extends Error {
  override name = "CfTimeError";
}

/** The calendar an attribute names; CF's default (absent attribute) is standard. */
export function cfCalendar(attribute: unknown): CfCalendar {
  if (attribute === undefined || attribute === null) return "standard";
  const name = typeof attribute === "string" ? CALENDAR_NAMES[attribute.trim().toLowerCase()] : undefined;
  if (name === undefined)
    throw new CfTimeError(
      `calendar ${JSON.stringify(attribute)} is not one CF names (${Object.keys(CALENDAR_NAMES).join(", ")})`,
    );
  return name;
}

const US_PER_DAY = 86_400_000_000n;

/** Microseconds per unit, by every spelling cftime accepts. */
const UNIT_US: Record<string, bigint> = {};
for (const [names, us] of [
  [["microseconds", "microsecond", "microsec", "microsecs"], 1n],
  [["milliseconds", "millisecond", "millisec", "millisecs", "msec", "msecs", "ms"], 1000n],
  [["seconds", "second", "sec", "secs", "s"], 1_000_000n],
  [["minutes", "minute", "min", "mins"], 60_000_000n],
  [["hours", "hour", "hr", "hrs", "h"], 3_600_000_000n],
  [["days", "day", "d"], US_PER_DAY],
  [["months", "month"], 30n * US_PER_DAY],
  [["common_years", "common_year"], 365n * US_PER_DAY],
] as const) {
  for (const n of names) UNIT_US[n] = us;
}

/** A date and time in one calendar; `year` as CF numbers it in that calendar (see hasYearZero). */
export interface CfDateTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  microsecond: number;
  calendar: CfCalendar;
}

/** Parsed units: the reference instant (UTC) as a day number and microseconds into that day. */
export interface CfUnits {
  units: string;
  calendar: CfCalendar;
  /** Microseconds per unit. */
  unitUs: bigint;
  /** The unit is a second or longer: cftime then snaps a result 1 µs off a whole second to it. */
  snapToSecond: boolean;
  /** Reference instant as microseconds since day 0 of the calendar's day numbering. */
  originUs: bigint;
}

/** Year 0 exists in proleptic_gregorian (ISO 8601) and the idealized calendars, not in standard or julian. */
export function hasYearZero(calendar: CfCalendar): boolean {
  return calendar !== "standard" && calendar !== "julian";
}

const floorDiv = (a: number, b: number) => Math.floor(a / b);

const CUM = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];
const CUM_LEAP = [0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366];

/** Julian Day Number of a proleptic Gregorian date (astronomical year; floor division keeps it exact for any year). */
function gregorianToJdn(y: number, m: number, d: number): number {
  const a = floorDiv(14 - m, 12);
  const yy = y + 4800 - a;
  const mm = m + 12 * a - 3;
  return (
    d + floorDiv(153 * mm + 2, 5) + 365 * yy + floorDiv(yy, 4) - floorDiv(yy, 100) + floorDiv(yy, 400) - 32045
  );
}

function julianToJdn(y: number, m: number, d: number): number {
  const a = floorDiv(14 - m, 12);
  const yy = y + 4800 - a;
  const mm = m + 12 * a - 3;
  return d + floorDiv(153 * mm + 2, 5) + 365 * yy + floorDiv(yy, 4) - 32083;
}

/** The month and day of the day `e` counted from March 1 (the inverse shared by both JDN conversions). */
function fromMarchDays(e: number, yearBase: number): [number, number, number] {
  const m = floorDiv(5 * e + 2, 153);
  const day = e - floorDiv(153 * m + 2, 5) + 1;
  const month = m + 3 - 12 * floorDiv(m, 10);
  return [yearBase + floorDiv(m, 10), month, day];
}

function jdnToGregorian(jdn: number): [number, number, number] {
  const a = jdn + 32044;
  const b = floorDiv(4 * a + 3, 146097);
  const c = a - floorDiv(146097 * b, 4);
  const d = floorDiv(4 * c + 3, 1461);
  const e = c - floorDiv(1461 * d, 4);
  return fromMarchDays(e, 100 * b + d - 4800);
}

function jdnToJulian(jdn: number): [number, number, number] {
  const c = jdn + 32082;
  const d = floorDiv(4 * c + 3, 1461);
  const e = c - floorDiv(1461 * d, 4);
  return fromMarchDays(e, d - 4800);
}

/** First day of the Gregorian calendar in the standard calendar: 1582-10-15 (JDN 2299161). */
const GREGORIAN_START = 2299161;

const isGregorianLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const isJulianLeap = (y: number) => y % 4 === 0;

/** Days in month `m` of astronomical year `y`. */
function monthLength(calendar: CfCalendar, y: number, m: number): number {
  if (calendar === "360_day") return 30;
  const leap =
    calendar === "all_leap" ||
    (calendar === "proleptic_gregorian" && isGregorianLeap(y)) ||
    (calendar === "julian" && isJulianLeap(y)) ||
    (calendar === "standard" && (y < 1582 ? isJulianLeap(y) : isGregorianLeap(y)));
  const cum = leap ? CUM_LEAP : CUM;
  return cum[m]! - cum[m - 1]!;
}

/** Day number of a date (astronomical year) in `calendar`; one day apart per day, any origin. */
function toDayNumber(calendar: CfCalendar, y: number, m: number, d: number): number {
  switch (calendar) {
    case "proleptic_gregorian":
      return gregorianToJdn(y, m, d);
    case "julian":
      return julianToJdn(y, m, d);
    case "standard": {
      const after = y > 1582 || (y === 1582 && (m > 10 || (m === 10 && d >= 15)));
      if (after) return gregorianToJdn(y, m, d);
      const before = y < 1582 || (y === 1582 && (m < 10 || (m === 10 && d <= 4)));
      if (!before)
        throw new CfTimeError(`${y}-${m}-${d} is not a date of the standard calendar (1582-10-05..14)`);
      return julianToJdn(y, m, d);
    }
    case "noleap":
      return y * 365 + CUM[m - 1]! + d - 1;
    case "all_leap":
      return y * 366 + CUM_LEAP[m - 1]! + d - 1;
    case "360_day":
      return y * 360 + (m - 1) * 30 + d - 1;
  }
}

function fromDayNumber(calendar: CfCalendar, n: number): [number, number, number] {
  switch (calendar) {
    case "proleptic_gregorian":
      return jdnToGregorian(n);
    case "julian":
      return jdnToJulian(n);
    case "standard":
      return n >= GREGORIAN_START ? jdnToGregorian(n) : jdnToJulian(n);
    case "360_day": {
      const y = floorDiv(n, 360);
      const r = n - y * 360;
      return [y, floorDiv(r, 30) + 1, (r % 30) + 1];
    }
    case "noleap":
    case "all_leap": {
      const len = calendar === "noleap" ? 365 : 366;
      const cum = calendar === "noleap" ? CUM : CUM_LEAP;
      const y = floorDiv(n, len);
      const r = n - y * len;
      let m = 1;
      while (r >= cum[m]!) m++;
      return [y, m, r - cum[m - 1]! + 1];
    }
  }
}

// The date after "since": a signed year of any length, month, day; optionally a time (seconds and a
// fraction optional) after a space or T; optionally a zone: Z, UTC/GMT, or ±hh[[:]mm].
const REFERENCE =
  /^([+-]?\d+)-(\d{1,2})-(\d{1,2})(?:[T ]+(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d+))?)?)?\s*(Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Parses CF time units in a calendar (CF's default: standard); CfTimeError names what does not fit. */
export function parseCfUnits(units: string, calendarAttr?: unknown): CfUnits {
  const calendar = cfCalendar(calendarAttr);
  const m = /^\s*(\S+)\s+since\s+(.+?)\s*$/i.exec(units);
  if (!m) throw new CfTimeError(`units ${JSON.stringify(units)} are not "<unit> since <date>"`);
  const unit = m[1]!.toLowerCase();
  const unitUs = UNIT_US[unit];
  if (unitUs === undefined) throw new CfTimeError(`unit ${JSON.stringify(m[1])} is not a CF time unit`);
  if ((unit === "months" || unit === "month") && calendar !== "360_day")
    throw new CfTimeError(`"${m[1]} since" is defined only in the 360_day calendar, not ${calendar}`);
  if ((unit === "common_years" || unit === "common_year") && calendar !== "noleap")
    throw new CfTimeError(`"${m[1]} since" is defined only in the noleap calendar, not ${calendar}`);
  const r = REFERENCE.exec(m[2]!);
  if (!r) throw new CfTimeError(`reference time ${JSON.stringify(m[2])} is not <date>[ <time>][ <zone>]`);
  let year = Number(r[1]);
  const month = Number(r[2]);
  const day = Number(r[3]);
  const hour = Number(r[4] ?? 0);
  const minute = Number(r[5] ?? 0);
  const second = Number(r[6] ?? 0);
  const micro = Number((r[7] ?? "").slice(0, 6).padEnd(6, "0"));
  if (!hasYearZero(calendar)) {
    if (year === 0) throw new CfTimeError(`year 0 does not exist in the ${calendar} calendar (1 BC is -1)`);
    if (year < 0) year += 1;
  }
  if (month < 1 || month > 12)
    throw new CfTimeError(`month ${month} of ${JSON.stringify(m[2])} is not 1..12`);
  if (day < 1 || day > monthLength(calendar, year, month))
    throw new CfTimeError(`day ${day} of ${JSON.stringify(m[2])} does not exist in the ${calendar} calendar`);
  if (hour > 23 || minute > 59 || second > 59)
    throw new CfTimeError(`time of day in ${JSON.stringify(m[2])} is out of range`);
  let offsetMinutes = 0;
  const zone = r[8]?.toUpperCase();
  if (zone !== undefined && zone !== "Z" && zone !== "UTC" && zone !== "GMT") {
    const z = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone)!;
    offsetMinutes = (z[1] === "-" ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3] ?? 0));
  }
  const dayNumber = toDayNumber(calendar, year, month, day);
  const timeUs = BigInt(((hour * 60 + minute) * 60 + second) * 1_000_000 + micro);
  return {
    units,
    calendar,
    unitUs,
    snapToSecond: unitUs >= 1_000_000n,
    // Local time minus its offset from UTC is UTC.
    originUs: BigInt(dayNumber) * US_PER_DAY + timeUs - BigInt(offsetMinutes) * 60_000_000n,
  };
}

/** floor(a / b) for bigints with b > 0. */
function bigFloorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

/** `value` times `factor` as exact floor, ceiling and round-half-to-even integers. */
function scale(value: number, factor: bigint): { floor: bigint; ceil: bigint; round: bigint } {
  if (Number.isInteger(value)) {
    const n = BigInt(value) * factor;
    return { floor: n, ceil: n, round: n };
  }
  // A finite double is an integer over a power of two; doubling is exact until it is an integer.
  let k = 0;
  let v = value;
  while (!Number.isInteger(v)) {
    v *= 2;
    k++;
  }
  const num = BigInt(v) * factor;
  const den = 1n << BigInt(k);
  const floor = bigFloorDiv(num, den);
  const rem = num - floor * den;
  const ceil = rem === 0n ? floor : floor + 1n;
  const twice = 2n * rem;
  const round = twice < den ? floor : twice > den ? ceil : floor % 2n === 0n ? floor : ceil;
  return { floor, ceil, round };
}

/** The date `value` units after the reference time, or undefined for NaN and ±Infinity (a missing value). */
export function decodeCfTime(value: number | bigint, u: CfUnits): CfDateTime | undefined {
  let delta: bigint;
  if (typeof value === "bigint") delta = value * u.unitUs;
  else {
    if (!Number.isFinite(value)) return undefined;
    const s = scale(value, u.unitUs);
    delta = s.round;
    if (u.snapToSecond) {
      const sub = ((delta % 1_000_000n) + 1_000_000n) % 1_000_000n;
      if (sub === 1n) delta = s.floor;
      else if (sub === 999_999n) delta = s.ceil;
    }
  }
  const total = u.originUs + delta;
  const dayNumber = bigFloorDiv(total, US_PER_DAY);
  let rest = Number(total - dayNumber * US_PER_DAY);
  const [astronomical, month, day] = fromDayNumber(u.calendar, Number(dayNumber));
  const microsecond = rest % 1_000_000;
  rest = (rest - microsecond) / 1_000_000;
  return {
    year: !hasYearZero(u.calendar) && astronomical <= 0 ? astronomical - 1 : astronomical,
    month,
    day,
    hour: Math.floor(rest / 3600),
    minute: Math.floor(rest / 60) % 60,
    second: rest % 60,
    microsecond,
    calendar: u.calendar,
  };
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/**
 * ISO 8601 form, as cftime's isoformat() writes it: 2000-01-01T00:00:00, six fraction digits when there
 * is a fraction, the year at least four digits with a minus sign before the year 1 (or 0).
 */
export function formatCfDateTime(d: CfDateTime): string {
  const year = d.year < 0 ? `-${pad(-d.year, 4)}` : pad(d.year, 4);
  const fraction = d.microsecond === 0 ? "" : `.${pad(d.microsecond, 6)}`;
  return `${year}-${pad(d.month)}-${pad(d.day)}T${pad(d.hour)}:${pad(d.minute)}:${pad(d.second)}${fraction}`;
}

/** A decoded time for people: ISO form, or undefined when the attributes are not CF time units. */
export function describeCfTime(
  value: number | bigint,
  units: unknown,
  calendar?: unknown,
): string | undefined {
  if (typeof units !== "string") return undefined;
  try {
    const d = decodeCfTime(value, parseCfUnits(units, calendar));
    return d === undefined ? undefined : formatCfDateTime(d);
  } catch (e) {
    if (e instanceof CfTimeError) return undefined;
    throw e;
  }
}

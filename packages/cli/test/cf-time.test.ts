import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findPython, runPython } from "@zarr-stream/test-support/python";
import {
  CfTimeError,
  cfCalendar,
  decodeCfTime,
  describeCfTime,
  formatCfDateTime,
  parseCfUnits,
} from "../src/cf-time.js";
import { formatTime } from "../src/time-units.js";

const python = findPython({ modules: ["cftime"] });

interface Case {
  value: number;
  units: string;
  calendar: string;
}

const CALENDARS = [
  "standard",
  "gregorian",
  "proleptic_gregorian",
  "noleap",
  "365_day",
  "all_leap",
  "366_day",
  "360_day",
  "julian",
];

/** Reference times: year 1, years before 100, around the 1582 switch, leap days, zone offsets, fractions. */
const REFERENCES = [
  "0001-01-01",
  "0001-01-01 00:00:00",
  "99-01-01",
  "0050-06-15 12:30",
  "1582-10-04",
  "1582-10-15 00:00:00",
  "1600-02-28",
  "1900-01-01 00:00:00",
  "1970-01-01T00:00:00Z",
  "2000-01-01 00:00:00 +00:00",
  "2000-01-01 00:00:00 -05:30",
  "2000-01-01T06:00:00+05:30",
  "2000-02-29 -0300",
  "2024-03-01 23:59:59.5 UTC",
  "-0001-12-31",
  "0000-01-01",
  "1582-10-10",
  "2001-02-30",
];

const UNITS = ["days", "hours", "seconds", "minutes", "milliseconds"];

/** Values: zero, whole and fractional, negative, and spans of centuries (730000 days is ~2000 years). */
const VALUES: Record<string, number[]> = {
  days: [0, 1, -1, 59.25, 365, 366, -366, 730000, 1e5 + 0.5, -730000],
  hours: [0, 25, -49.5, 8784, 1e6],
  seconds: [0, 1.5, 86399, -86401, 356400, 3.1536e10],
  minutes: [0, 90, -1441, 525600.5],
  milliseconds: [0, 1, -1, 86400000.5],
};

/** A deterministic table: every calendar against every reference with a spread of units and values. */
function table(): Case[] {
  const cases: Case[] = [];
  let i = 0;
  for (const calendar of CALENDARS) {
    for (const ref of REFERENCES) {
      const unit = UNITS[i % UNITS.length]!;
      const values = VALUES[unit]!;
      for (let k = 0; k < 3; k++)
        cases.push({ value: values[(i + k) % values.length]!, units: `${unit} since ${ref}`, calendar });
      i++;
    }
  }
  // The cases and CF's special units.
  cases.push(
    { value: 0, units: "days since 0001-01-01", calendar: "standard" },
    { value: 730000, units: "days since 0001-01-01", calendar: "noleap" },
    { value: 13, units: "months since 2000-01-01", calendar: "360_day" },
    { value: 2, units: "common_years since 2000-01-01", calendar: "noleap" },
    { value: 2, units: "months since 2000-01-01", calendar: "standard" },
    { value: 1e-6, units: "seconds since 2000-01-01", calendar: "standard" },
    { value: 0.999999, units: "seconds since 2000-01-01", calendar: "standard" },
    { value: 1.0000001, units: "seconds since 2000-01-01", calendar: "julian" },
    { value: 0.1, units: "days since 1582-10-04", calendar: "standard" },
    { value: 1, units: "DAYS SINCE 1582-10-04", calendar: "Gregorian" },
    { value: 6, units: "hours since 2000-1-1 1:2:3", calendar: "all_leap" },
    { value: -1, units: "days since 0001-01-01", calendar: "julian" },
    { value: -1, units: "days since 0001-01-01", calendar: "proleptic_gregorian" },
  );
  return cases;
}

const CFTIME = `
import json, sys, cftime
out = []
for c in json.load(sys.stdin):
    try:
        out.append(cftime.num2date(c["value"], c["units"], c["calendar"]).isoformat())
    except Exception as e:
        out.append("error")
print(json.dumps(out))
`;

function ours(c: Case): string {
  try {
    const d = decodeCfTime(c.value, parseCfUnits(c.units, c.calendar));
    return d === undefined ? "missing" : formatCfDateTime(d);
  } catch (e) {
    if (e instanceof CfTimeError) return "error";
    throw e;
  }
}

describe("CF time against cftime", () => {
  it("decodes a table of over 200 cases exactly as cftime.num2date does", { skip: python.skip }, () => {
    const cases = table();
    assert.ok(cases.length >= 200, `${cases.length} cases`);
    const want = JSON.parse(runPython(python.require(), CFTIME, JSON.stringify(cases))) as string[];
    const wrong = cases
      .map((c, i) => ({ c, got: ours(c), want: want[i]! }))
      .filter((r) => r.got !== r.want)
      .map((r) => `${r.c.value} ${r.c.units} (${r.c.calendar}): ours ${r.got}, cftime ${r.want}`);
    assert.deepEqual(wrong, []);
    // The table exercises decoding, not only refusals.
    assert.ok(want.filter((w) => w !== "error").length > 180);
  });
});

describe("CF time", () => {
  it("decodes the issue's examples: year 1 stays year 1, noleap counts 365-day years, zone offsets parse", () => {
    assert.equal(describeCfTime(0, "days since 0001-01-01"), "0001-01-01T00:00:00");
    assert.equal(describeCfTime(730000, "days since 0001-01-01", "noleap"), "2001-01-01T00:00:00");
    assert.equal(describeCfTime(0, "hours since 2000-01-01 00:00:00 +00:00"), "2000-01-01T00:00:00");
    assert.equal(describeCfTime(0, "hours since 2000-01-01 05:30 +05:30"), "2000-01-01T00:00:00");
    assert.equal(describeCfTime(1, "days since 1582-10-04", "standard"), "1582-10-15T00:00:00");
    assert.equal(describeCfTime(-1, "days since 0001-01-01", "julian"), "-0001-12-31T00:00:00");
    assert.equal(describeCfTime(59, "days since 2000-01-01", "360_day"), "2000-02-30T00:00:00");
    assert.equal(describeCfTime(10n, "seconds since 2000-01-01"), "2000-01-01T00:00:10");
  });

  it("names what it cannot decode", () => {
    assert.equal(describeCfTime(0, "fortnights since 2000-01-01"), undefined);
    assert.equal(describeCfTime(0, "K"), undefined);
    assert.equal(describeCfTime(Number.NaN, "days since 2000-01-01"), undefined);
    assert.throws(() => cfCalendar("martian"), /calendar "martian" is not one CF names/);
    assert.throws(() => parseCfUnits("days since 0000-01-01", "standard"), /year 0 does not exist/);
    assert.throws(() => parseCfUnits("days since 1582-10-10"), /not a date of the standard calendar/);
    assert.throws(() => parseCfUnits("months since 2000-01-01"), /only in the 360_day calendar/);
    assert.throws(() => parseCfUnits("days since 2001-02-29", "noleap"), /day 29 .* does not exist/);
  });

  it("formats plot titles with the calendar named when it is not the standard one", () => {
    assert.equal(formatTime(169200, "seconds since 2000-01-01 00:00:00"), "t = 2000-01-02 23:00");
    assert.equal(formatTime(1.5, "days since 1970-01-01"), "t = 1970-01-02 12:00");
    assert.equal(formatTime(30, "seconds since 1970-01-01"), "t = 1970-01-01 00:00:30");
    assert.equal(formatTime(730000, "days since 0001-01-01", "noleap"), "t = 2001-01-01 00:00 (noleap)");
    assert.equal(formatTime(42, "s"), "t = 42 s");
    assert.equal(formatTime(3, "days since 2000-01-01", "martian"), "t = 3 days since 2000-01-01");
  });
});

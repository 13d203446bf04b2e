import { intOption, UsageError } from "../command-line.js";
import type { PlotRequest } from "./plot.js";

// ---------------------------------------------------------------------------------------------------
// `zstream plot`: every option it takes, and how the parsed values become a PlotRequest. An option is
// added here (declaration, conversion) and in HELP.plot of help.ts; cli.ts only calls these two.
// ---------------------------------------------------------------------------------------------------

export const PLOT_OPTIONS = {
  var: { type: "string" },
  record: { type: "string" },
  slice: { type: "string", multiple: true },
  out: { type: "string" },
} as const;

export interface PlotValues {
  var?: string;
  record?: string;
  slice?: string[];
  out?: string;
}

function parseSlices(list: string[] | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of list ?? []) {
    const m = /^([^=]+)=(\d+)$/.exec(s);
    if (!m)
      throw new UsageError(`--slice must be dim=k with k a non-negative integer, got ${JSON.stringify(s)}`);
    if (m[1]! in out) throw new UsageError(`--slice ${m[1]} is given twice`);
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** The request and the default output file name; every malformed option is a UsageError naming it. */
export function plotRequestOf(values: PlotValues): { request: PlotRequest; defaultOut: string } {
  if (values.var === undefined || values.var === "") throw new UsageError("plot needs --var V");
  const record = values.record === undefined ? undefined : intOption(values.record, "record", 0, 0);
  return {
    request: {
      variable: values.var,
      ...(record === undefined ? {} : { record }),
      slices: parseSlices(values.slice),
    },
    defaultOut: `${values.var.replaceAll("/", "_")}${record === undefined ? "" : `-${record}`}.png`,
  };
}

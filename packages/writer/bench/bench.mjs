#!/usr/bin/env node
// npm run bench [-- --json FILE] [--quick] [--rounds N] [--no-scaling] [--only limit,zarr-stream,...]
//   [--curves commitVsWriters,manifestVsRecords,rssAndReadVsRecords] [--workload FILE.json]
// --workload: a JSON object of workload fields laid over the default (or quick) workload (workload.mjs).
// Prints the table on stdout (progress on stderr); --json also writes the results as JSON.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { runBench } from "./harness.mjs";
import { formatReport } from "./report.mjs";

const { values } = parseArgs({
  options: {
    json: { type: "string" },
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    "no-scaling": { type: "boolean", default: false },
    only: { type: "string" },
    curves: { type: "string" },
    workload: { type: "string" },
  },
});
const out = await runBench({
  quick: values.quick,
  json: values.json,
  rounds: values.rounds === undefined ? undefined : Number(values.rounds),
  scaling: !values["no-scaling"],
  only: values.only?.split(","),
  curves: values.curves?.split(","),
  workload: values.workload === undefined ? undefined : JSON.parse(readFileSync(values.workload, "utf8")),
});
process.stdout.write(formatReport(out));

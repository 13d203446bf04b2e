#!/usr/bin/env node
// npm run bench [-- --json FILE] [--quick] [--rounds N] [--no-scaling] [--only limit,zarr-stream,...]
//   [--curves commitVsWriters,manifestVsRecords,rssAndReadVsRecords]
// npm run bench -- --matrix [--json FILE] [--quick] [--rounds N] [--cells NAME,...] [--baseline DIR]
//   the workload matrix (matrix.mjs; README "The workload matrix")
// Prints the table on stdout (progress on stderr); --json also writes the results as JSON.
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
    matrix: { type: "boolean", default: false },
    cells: { type: "string" },
    baseline: { type: "string" },
  },
});
if (values.matrix) {
  const { runMatrix, formatMatrix } = await import("./matrix.mjs");
  const out = await runMatrix({
    quick: values.quick,
    json: values.json,
    rounds: values.rounds === undefined ? undefined : Number(values.rounds),
    cells: values.cells?.split(","),
    baseline: values.baseline,
  });
  process.stdout.write(formatMatrix(out));
  process.exit(0);
}
const out = await runBench({
  quick: values.quick,
  json: values.json,
  rounds: values.rounds === undefined ? undefined : Number(values.rounds),
  scaling: !values["no-scaling"],
  only: values.only?.split(","),
  curves: values.curves?.split(","),
});
process.stdout.write(formatReport(out));

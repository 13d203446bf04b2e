#!/usr/bin/env node
// npm run bench [-- --json FILE] [--quick] [--rounds N] [--no-scaling] [--only limit,zarr-stream,...]
//   [--curves commitVsWriters,manifestVsRecords,rssAndReadVsRecords] [--js-peers]
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
    "js-peers": { type: "boolean", default: false },
  },
});
const out = await runBench({
  quick: values.quick,
  json: values.json,
  rounds: values.rounds === undefined ? undefined : Number(values.rounds),
  scaling: !values["no-scaling"],
  only: values.only?.split(","),
  curves: values.curves?.split(","),
  jsPeers: values["js-peers"],
});
process.stdout.write(formatReport(out));

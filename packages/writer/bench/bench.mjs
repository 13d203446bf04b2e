#!/usr/bin/env node
// npm run bench [-- --json FILE] [--quick] [--rounds N] [--no-scaling] [--only limit,zarr-stream,...]
//   [--curves commitVsWriters,manifestVsRecords,rssAndReadVsRecords] [--workload FILE.json] [--js-peers]
// --workload: a JSON object of workload fields laid over the default (or quick) workload (workload.mjs).
// npm run bench -- --s3 small|full|quick [--s3-keep-alive] [--rounds N] [--only zarr-stream-s3,...]
//   [--json FILE]: the S3 part alone (s3.mjs), through versitygw on loopback.
// npm run bench -- --matrix [--json FILE] [--quick] [--rounds N] [--cells NAME,...] [--baseline DIR]
//   the workload matrix (matrix.mjs; README "The workload matrix")
// Prints the table on stdout (progress on stderr); --json also writes the results as JSON.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { runBench } from "./harness.mjs";
import { formatReport } from "./report.mjs";
import { formatS3Report, runS3Bench } from "./s3.mjs";

const { values } = parseArgs({
  options: {
    json: { type: "string" },
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    "no-scaling": { type: "boolean", default: false },
    only: { type: "string" },
    curves: { type: "string" },
    workload: { type: "string" },
    s3: { type: "string" },
    "s3-keep-alive": { type: "boolean", default: false },
    matrix: { type: "boolean", default: false },
    cells: { type: "string" },
    baseline: { type: "string" },
    "js-peers": { type: "boolean", default: false },
  },
});
if (values.s3 !== undefined) {
  const out = await runS3Bench({
    size: values.s3,
    json: values.json,
    rounds: values.rounds === undefined ? undefined : Number(values.rounds),
    only: values.only?.split(","),
    keepAlive: values["s3-keep-alive"],
  });
  process.stdout.write(formatS3Report(out));
  process.exit(0);
}
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
  workload: values.workload === undefined ? undefined : JSON.parse(readFileSync(values.workload, "utf8")),
  jsPeers: values["js-peers"],
});
process.stdout.write(formatReport(out));

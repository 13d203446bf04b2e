export {
  type CfCalendar,
  type CfDateTime,
  CfTimeError,
  type CfUnits,
  cfCalendar,
  decodeCfTime,
  describeCfTime,
  formatCfDateTime,
  parseCfUnits,
} from "./cf-time.js";
export { EXIT, runCli } from "./cli.js";
export { UsageError, VERSION } from "./command-line.js";
export { type DemoSummary, runDemo } from "./demo/run.js";
export { type DumpMeta, dumpStore } from "./dump.js";
export { formatInspect, type InspectReport, inspectStore, type ZarrInspectReport } from "./inspect.js";
export type { CliIo } from "./io.js";
export { type PlotRequest, type PlotResult, plotStore } from "./plot/plot.js";
export { formatVerify, type Problem, type VerifyReport, verifyStore } from "./verify.js";

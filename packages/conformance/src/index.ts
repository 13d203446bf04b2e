export { compareDump } from "./check.js";
export { type CliIO, CONFORMANCE_USAGE, processIO, runConformanceCli } from "./cli.js";
export { BUNDLED_CORPUS, findCase, loadCorpus, parseCorpus, roleOf, streamSchemaOf } from "./corpus.js";
export { type RunCaseOptions, runCase } from "./driver.js";
export { dumpStore } from "./dump.js";
export { ConformanceFailure, NotRunnable } from "./errors.js";
export { recordArraysFor } from "./generate.js";
export { exportKit, KIT_FILES, kitSource } from "./kit.js";
export { oracleDump } from "./oracle.js";
export {
  PYTHON_READERS,
  type PythonReader,
  PythonReaderError,
  runPythonCheck,
  runPythonReader,
} from "./python-readers.js";
export {
  type ExternalContributor,
  type ExternalOwner,
  PythonContributor,
  PythonOwner,
} from "./python-writers.js";
export { dumpWithZarrita } from "./zarrita-dump.js";

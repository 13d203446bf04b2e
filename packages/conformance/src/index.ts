export { compareDump } from "./check.js";
export { type CliIO, CONFORMANCE_USAGE, processIO, runConformanceCli } from "./cli.js";
export { BUNDLED_CORPUS, findCase, loadCorpus, parseCorpus, roleOf, streamSchemaOf } from "./corpus.js";
export { type RunCaseOptions, runCase } from "./driver.js";
export { dumpStore } from "./dump.js";
export { ConformanceFailure } from "./errors.js";
export { recordArraysFor } from "./generate.js";
export { exportKit, KIT_FILES, kitSource } from "./kit.js";
export { oracleDump } from "./oracle.js";
export { type ExternalContributor, PythonContributor } from "./python-contributor.js";
export {
  PYTHON_READERS,
  type PythonReader,
  PythonReaderError,
  runPythonCheck,
  runPythonReader,
} from "./python-readers.js";
export { dumpWithZarrita } from "./zarrita-dump.js";

import { existsSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  type ConformanceCase,
  type ConformanceCorpus,
  type ConformanceDump,
  validateConformanceDump,
  ZarrStreamError,
} from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { compareDump } from "./check.js";
import { findCase, loadCorpus } from "./corpus.js";
import { runCase } from "./driver.js";
import { dumpStore } from "./dump.js";
import { exportKit, KitExportRefused } from "./kit.js";
import { oracleDump } from "./oracle.js";
import { PYTHON_READERS, runPythonCheck, runPythonReader } from "./python-readers.js";
import { dumpWithZarrita } from "./zarrita-dump.js";

export interface CliIO {
  stdout(line: string): void;
  stderr(line: string): void;
}

export const processIO: CliIO = {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
};

const USAGE = `usage:
  zstream-conformance write --corpus FILE --out DIR [--case NAME]
      run every case (or one) against a fresh DIR/<case>/store/ and dump it to DIR/<case>/dump.json
  zstream-conformance read --store DIR --case NAME --corpus FILE --out dump.json [--reader zarr-stream-ts|zarrita]
      dump what the store at DIR committed (earthsciio/write-v2-dump/v1)
  zstream-conformance check --corpus FILE DUMP...
      compare each dump with the oracle bitwise; one line per dump; exit 0 only if all match
  zstream-conformance crosscheck --corpus FILE --out DIR [--python PATH]
      write, dump with every reader (zarr-stream-ts, zarrita; with --python also zarr-python,
      tensorstore, earthsciio), then check every dump; with --python the Python check
      (crosscheck_write_v2.py) must print the same lines
  zstream-conformance kit export DIR
      copy the conformance kit (corpus, its schemas, the dump schema, crosscheck_write_v2.py, README.md)
      into DIR, for a binding to run without this repository`;

/** The help text of `zstream conformance` (zstream prints it for --help on every subcommand). */
export const CONFORMANCE_USAGE = `Usage: zstream conformance <subcommand> [options]

${USAGE.replace(/^usage:\n/, "Subcommands:\n").replaceAll("zstream-conformance", "zstream conformance")}

A --corpus, --store or DUMP path that does not exist is a usage error.
Exit codes: 0 ok, 1 a case failed or a dump differs from the oracle, 2 usage, 3 a store or contract error.

Example:
  zstream conformance crosscheck --corpus corpus.json --out /tmp/xcheck
`;

class UsageError extends Error {}

function required(values: Record<string, string | boolean | undefined>, name: string): string {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

/** An input path that must exist (the corpus, a store to read, a dump to check): named when it does not. */
function existing(path: string, what: string): string {
  if (!existsSync(path)) throw new UsageError(`${what} ${path} does not exist`);
  return path;
}

/** Runs each case against a fresh DIR/<case>/store and writes our reader's dump; returns the cases that ran. */
async function writeCases(
  cases: ConformanceCase[],
  out: string,
  io: CliIO,
): Promise<{ ok: ConformanceCase[]; failed: number }> {
  const ok: ConformanceCase[] = [];
  let failed = 0;
  for (const c of cases) {
    const dir = join(out, c.name);
    // The case must start from an empty store; only our own output directory is cleared.
    await rm(join(dir, "store"), { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const store = new FsStore(join(dir, "store"));
    try {
      await runCase(c, store);
      const dump = await dumpStore(store, c.name);
      await writeFile(join(dir, "dump.json"), `${JSON.stringify(dump)}\n`);
      io.stdout(`ok ${c.name}: ${join(dir, "store")}`);
      ok.push(c);
    } catch (err) {
      failed++;
      const e = err as Error;
      io.stdout(`FAIL ${c.name}: ${e.name}: ${e.message}`);
    }
  }
  return { ok, failed };
}

async function writeCommand(args: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { corpus: { type: "string" }, out: { type: "string" }, case: { type: "string" } },
  });
  const corpus = await loadCorpus(existing(required(values, "corpus"), "--corpus"));
  const cases = values.case === undefined ? corpus.cases : [findCase(corpus, values.case)];
  const { failed } = await writeCases(cases, required(values, "out"), io);
  return failed === 0 ? 0 : 1;
}

async function readCommand(args: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      store: { type: "string" },
      case: { type: "string" },
      corpus: { type: "string" },
      out: { type: "string" },
      reader: { type: "string" },
    },
  });
  const corpus = await loadCorpus(existing(required(values, "corpus"), "--corpus"));
  const c = findCase(corpus, required(values, "case"));
  const root = existing(required(values, "store"), "--store");
  const reader = values.reader ?? "zarr-stream-ts";
  let dump: ConformanceDump;
  if (reader === "zarr-stream-ts") dump = await dumpStore(new FsStore(root), c.name);
  else if (reader === "zarrita") dump = await dumpWithZarrita(root, c.name);
  else throw new UsageError(`--reader must be zarr-stream-ts or zarrita, got ${reader}`);
  const out = required(values, "out");
  await writeFile(out, `${JSON.stringify(dump)}\n`);
  io.stdout(
    `${c.name}: ${dump.records.length} records, ${Object.keys(dump.statics).length} statics, ${dump.blobs.length} blobs -> ${out}`,
  );
  return 0;
}

/** One line per mismatch list: the first few named, the rest counted. */
function summary(mismatches: string[]): string {
  const shown = mismatches.slice(0, 5).join("; ");
  return mismatches.length > 5 ? `${shown}; and ${mismatches.length - 5} more` : shown;
}

/** One line per dump file (printed and returned); counts the dumps that did not match the oracle. */
async function checkDumps(
  corpus: ConformanceCorpus,
  files: string[],
  io: CliIO,
): Promise<{ failed: number; lines: string[] }> {
  const lines: string[] = [];
  let failed = 0;
  for (const file of files) {
    let line: string;
    try {
      const dump = validateConformanceDump(JSON.parse(await readFile(file, "utf8")));
      const mismatches = compareDump(oracleDump(findCase(corpus, dump.case)), dump);
      line =
        mismatches.length === 0
          ? `ok ${dump.case} reader=${dump.reader} (${file})`
          : `FAIL ${dump.case} reader=${dump.reader} (${file}): ${summary(mismatches)}`;
      if (mismatches.length > 0) failed++;
    } catch (err) {
      failed++;
      const e = err as Error;
      line = `FAIL ${file}: ${e.name}: ${e.message}`;
    }
    io.stdout(line);
    lines.push(line);
  }
  return { failed, lines };
}

async function checkCommand(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { corpus: { type: "string" } },
    allowPositionals: true,
  });
  const corpus = await loadCorpus(existing(required(values, "corpus"), "--corpus"));
  if (positionals.length === 0) throw new UsageError("check needs at least one dump file");
  for (const p of positionals) existing(p, "DUMP");
  return (await checkDumps(corpus, positionals, io)).failed === 0 ? 0 : 1;
}

/**
 * write, then every reader (ours, zarrita, and with --python the Python readers, one process each for
 * the whole corpus), then check of every dump.
 */
async function crosscheckCommand(args: string[], io: CliIO): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { corpus: { type: "string" }, out: { type: "string" }, python: { type: "string" } },
  });
  const corpusPath = existing(required(values, "corpus"), "--corpus");
  const corpus = await loadCorpus(corpusPath);
  const out = required(values, "out");
  const { ok, failed } = await writeCases(corpus.cases, out, io);
  const dumps = ok.map((c) => join(out, c.name, "dump.json"));
  for (const c of ok) {
    const file = join(out, c.name, "zarrita.json");
    await writeFile(file, `${JSON.stringify(await dumpWithZarrita(join(out, c.name, "store"), c.name))}\n`);
    dumps.push(file);
  }
  let readerFailures = 0;
  if (values.python !== undefined) {
    for (const reader of PYTHON_READERS) {
      const jobs = ok.map((c) => ({
        store: join(out, c.name, "store"),
        case: c.name,
        out: join(out, c.name, `${reader}.json`),
      }));
      try {
        await runPythonReader(values.python, reader, jobs, out);
        dumps.push(...jobs.map((j) => j.out));
      } catch (err) {
        readerFailures++;
        io.stdout(`FAIL ${reader}: ${(err as Error).message}`);
      }
    }
  }
  const { failed: mismatched, lines } = await checkDumps(corpus, dumps, io);
  io.stdout(
    `${dumps.length - mismatched} of ${dumps.length} dumps match the oracle; ${failed} cases failed to run`,
  );
  let disagreements = 0;
  if (values.python !== undefined) {
    // The Python check (what other bindings run) must print exactly our lines.
    const py = await runPythonCheck(values.python, corpusPath, dumps);
    disagreements =
      lines.filter((l, i) => py.lines[i] !== l).length + Math.max(0, py.lines.length - lines.length);
    io.stdout(
      disagreements === 0
        ? `crosscheck_write_v2.py agrees on all ${dumps.length} dumps`
        : `FAIL crosscheck_write_v2.py disagrees on ${disagreements} of ${dumps.length} dumps ${py.stderr.trim()}`,
    );
  }
  return failed + readerFailures + mismatched + disagreements === 0 ? 0 : 1;
}

async function kitCommand(args: string[], io: CliIO): Promise<number> {
  const [sub, dir, ...extra] = args;
  if (sub !== "export" || dir === undefined || dir === "" || extra.length > 0)
    throw new UsageError("kit takes: export DIR");
  for (const file of await exportKit(dir)) io.stdout(file);
  return 0;
}

/**
 * The `zstream conformance …` command line: write | read | check | crosscheck | kit export. Returns the
 * exit code (0 ok, 1 a case or dump failed, 2 bad usage, 3 a ZarrStreamError) instead of exiting, so the
 * zstream CLI can delegate to it. Any other error is thrown: zstream reports it as an internal error (exit 4).
 */
export async function runConformanceCli(argv: string[], io: CliIO = processIO): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "write":
        return await writeCommand(rest, io);
      case "read":
        return await readCommand(rest, io);
      case "check":
        return await checkCommand(rest, io);
      case "crosscheck":
        return await crosscheckCommand(rest, io);
      case "kit":
        return await kitCommand(rest, io);
      case undefined:
      case "help":
      case "--help":
        io.stdout(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (err) {
    const e = err as Error;
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr(`zstream-conformance: ${e.message}`);
      io.stderr(USAGE);
      return 2;
    }
    if (e instanceof KitExportRefused) {
      io.stderr(`zstream-conformance: ${e.message}`);
      return 1;
    }
    if (!(e instanceof ZarrStreamError)) throw e;
    io.stderr(`zstream-conformance: ${e.name}: ${e.message}`);
    return 3;
  }
}

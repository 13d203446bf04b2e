import { once } from "node:events";
import { createWriteStream, existsSync, statSync } from "node:fs";
import { readFile, rename, unlink } from "node:fs/promises";
import { extname } from "node:path";
import { parseArgs } from "node:util";
import { type JournalFormat, ZarrStreamError } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import type { ByteSink } from "./blob-io.js";
import { JournalError } from "./errors.js";
import { pruneJournal } from "./prune.js";
import { publishPart } from "./publish.js";
import { composeHeadToStream, exportSessionToStream } from "./session.js";
import { SqliteJournalRegistry } from "./sqlite-registry.js";

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export const JOURNAL_USAGE = `Usage: zstream journal <command> [options]

Commands:
  publish --db F --store DIR FILE [--format csv|ndjson] [--max-parts N] [--part-index N] [--watermark N]
      Publish FILE as the next part; one row whose configuration is the cumulative head.
      FILE is checked and stored in the journal's form first (README, "What a part may hold").
      --part-index repeats a run that may have crashed (idempotent on the row identifier); without it,
      a FILE whose bytes equal the part the current row's run published is taken as a retry and returns
      that row, and one that a concurrent publish of equal bytes beats is a DuplicatePublish (exit 3).
  compose --db F --store DIR [--out FILE]
      Write the current output's composite (stdout when --out is omitted).
  prune --db F --store DIR --cutoff ISO [--dry-run]
      Delete superseded rows due by the cutoff and their blobs, and part blobs no row references at
      indexes the journal has passed; never anything the current output uses.
  export --db F --store DIR --out FILE.zip
      Session export: every row's part blob as its own entry plus index.json (md5, size).

Options:
  -h, --help   Show this help.

compose, prune and export read an existing journal: a --db that does not exist is a usage error, never
created. Exit codes: 0 ok, 2 usage (a missing option or file), 3 a JournalError or other store or
contract error.

Example:
  zstream journal publish --db journal.db --store parts/ rows.csv
`;

class UsageError extends Error {}

const OPTIONS = {
  db: { type: "string" },
  store: { type: "string" },
  format: { type: "string" },
  "max-parts": { type: "string" },
  "part-index": { type: "string" },
  watermark: { type: "string" },
  out: { type: "string" },
  cutoff: { type: "string" },
  "dry-run": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>["values"];

function required(values: Values, name: "db" | "store" | "cutoff" | "out"): string {
  const v = values[name];
  if (v === undefined || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

function integer(values: Values, name: "max-parts" | "part-index"): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v))
    throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

function formatOf(values: Values, file: string): JournalFormat | undefined {
  const f = values.format;
  if (f !== undefined) {
    if (f !== "csv" && f !== "ndjson")
      throw new UsageError(`--format must be csv or ndjson, got ${JSON.stringify(f)}`);
    return f;
  }
  const ext = extname(file).toLowerCase();
  if (ext === ".csv") return "csv";
  if (ext === ".ndjson" || ext === ".jsonl") return "ndjson";
  return undefined;
}

async function write(out: NodeJS.WritableStream, chunk: Uint8Array | string): Promise<void> {
  if (!out.write(chunk)) await once(out, "drain");
}

/** An existing journal for the commands that only read or prune it: opening SQLite would create the file. */
function existingDb(values: Values): void {
  const db = required(values, "db");
  if (!existsSync(db)) throw new UsageError(`--db ${db} does not exist`);
}

async function withJournal<T>(
  values: Values,
  run: (registry: SqliteJournalRegistry, store: FsStore) => Promise<T>,
): Promise<T> {
  const registry = new SqliteJournalRegistry(required(values, "db"));
  try {
    return await run(registry, new FsStore(required(values, "store")));
  } finally {
    registry.close();
  }
}

/** An id beyond 2^53 stays exact (a bigint); anything else must be a finite number. */
function watermarkArg(text: string): number | bigint {
  if (/^-?\d+$/.test(text)) {
    const n = Number(text);
    return Number.isSafeInteger(n) ? n : BigInt(text);
  }
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n))
    throw new UsageError(`--watermark must be a number, got ${JSON.stringify(text)}`);
  return n;
}

async function publish(values: Values, positionals: string[], io: CliIo): Promise<void> {
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0) throw new UsageError("publish takes exactly one FILE");
  if (!existsSync(file)) throw new UsageError(`FILE ${file} does not exist`);
  if (statSync(file).isDirectory()) throw new UsageError(`FILE ${file} is a directory`);
  const watermark = values.watermark === undefined ? undefined : watermarkArg(values.watermark);
  const format = formatOf(values, file);
  const maxParts = integer(values, "max-parts");
  const partIndex = integer(values, "part-index");
  const part = await readFile(file);
  const result = await withJournal(values, (registry, store) =>
    publishPart({
      registry,
      store,
      part,
      format,
      maxParts,
      partIndex,
      watermark,
      // A CLI invocation has no run identity: a re-run with the same FILE is a retry of the row it made.
      retryByContent: true,
    }),
  );
  const c = result.row.config;
  const summary = {
    outputIdentifier: c.outputIdentifier,
    partKey: c.partKey,
    partCount: c.partCount,
    journalCompactionCount: c.journalCompactionCount,
    created: result.created,
    compacted: result.compacted,
    rewritten: result.rewritten,
  };
  await write(io.stdout, `${JSON.stringify(summary)}\n`);
}

/**
 * Streams into a file written beside the target and renamed, so a failed run never leaves a truncated
 * composite or archive at `out`. Resolves to the bytes written.
 */
async function toFile(out: string, write: (sink: ByteSink) => Promise<number>): Promise<number> {
  const temp = `${out}.partial-${process.pid}`;
  const file = createWriteStream(temp);
  try {
    const bytes = await write(file);
    file.end();
    await once(file, "finish");
    await rename(temp, out);
    return bytes;
  } catch (error) {
    file.destroy();
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

async function compose(values: Values, io: CliIo): Promise<void> {
  existingDb(values);
  const out = values.out;
  await withJournal(values, async (registry, store) => {
    if (out === undefined) {
      await composeHeadToStream(registry, store, (chunk) => write(io.stdout, chunk));
      return;
    }
    const bytes = await toFile(out, (file) => composeHeadToStream(registry, store, file));
    await write(io.stdout, `${JSON.stringify({ out, bytes })}\n`);
  });
}

async function prune(values: Values, io: CliIo): Promise<void> {
  const cutoff = required(values, "cutoff");
  existingDb(values);
  const dryRun = values["dry-run"] === true;
  const plan = await withJournal(values, (registry, store) =>
    pruneJournal(registry, store, { cutoff, dryRun }),
  );
  const summary = {
    dryRun,
    pruned: plan.prune.map((r) => r.config.outputIdentifier),
    kept: plan.keep.map(({ row, reason }) => ({ outputIdentifier: row.config.outputIdentifier, reason })),
    orphans: plan.orphans,
  };
  await write(io.stdout, `${JSON.stringify(summary)}\n`);
}

async function exportZip(values: Values, io: CliIo): Promise<void> {
  const out = required(values, "out");
  existingDb(values);
  const bytes = await withJournal(values, (registry, store) =>
    toFile(out, (file) => exportSessionToStream(registry, store, file)),
  );
  await write(io.stdout, `${JSON.stringify({ out, bytes })}\n`);
}

/**
 * `zstream journal …` in-process: returns the exit code (0 ok, 2 usage, 3 a JournalError or other
 * ZarrStreamError) and never exits the process, so the CLI package can delegate to it and tests can call
 * it. Any other error is thrown: zstream reports it as an internal error (exit 4).
 */
export async function runJournalCli(argv: string[], io: CliIo): Promise<number> {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    await write(io.stderr, `error: ${(error as Error).message}\n\n${JOURNAL_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === "help") {
    await write(io.stdout, JOURNAL_USAGE);
    return 0;
  }
  try {
    if (command === "publish") await publish(values, rest, io);
    else if (command === "compose" || command === "prune" || command === "export") {
      if (rest.length > 0) throw new UsageError(`${command} takes no positional arguments`);
      await (command === "compose" ? compose : command === "prune" ? prune : exportZip)(values, io);
    } else
      throw new UsageError(
        command === undefined ? "missing command" : `unknown command ${JSON.stringify(command)}`,
      );
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      await write(io.stderr, `error: ${error.message}\n\n${JOURNAL_USAGE}`);
      return 2;
    }
    if (error instanceof ZarrStreamError || error instanceof JournalError) {
      await write(io.stderr, `error: ${error.name}: ${error.message}\n`);
      return 3;
    }
    throw error;
  }
}

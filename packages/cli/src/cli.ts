import { writeFile } from "node:fs/promises";
import { basename } from "node:path";
import { type Profile, ZarrStreamError } from "@zarr-stream/spec";
import { serveViewer } from "@zarr-stream/viewer";
import { setManifestPages } from "@zarr-stream/writer";
import { globalFlags, intOption, parseCommand, storeArgument, UsageError, VERSION } from "./command-line.js";
import { runDemoProcs, runDemoRank } from "./demo/ranks.js";
import { runDemo } from "./demo/run.js";
import { dumpStore } from "./dump.js";
import { HELP, MAIN_HELP } from "./help.js";
import { formatInspect, inspectStore } from "./inspect.js";
import type { CliIo } from "./io.js";
import { openExistingStore, outputWriteError, requireOutputFile, requireStorePath } from "./paths.js";
import { PLOT_OPTIONS, plotRequestOf } from "./plot/options.js";
import { plotStore } from "./plot/plot.js";
import { Progress } from "./progress.js";
import { formatVerify, verifyStore } from "./verify.js";
import { storeKind } from "./zarr-arrays.js";

/**
 * Exit codes, the README's table: 0 ok; 1 a check failed or an operation was refused; 2 usage (the
 * command line, a path that does not exist, an --out that cannot be written); 3 store or contract error
 * (a ZarrStreamError: not a Zarr store, no control plane, NotCommitted, ...); 4 internal error (a bug).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, error: 3, internal: 4 } as const;

const PROFILES: Profile[] = ["diagnostic", "checkpoint", "wasm"];

function json(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

async function demo(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    out: { type: "string" },
    writers: { type: "string" },
    records: { type: "string" },
    profile: { type: "string" },
    grid: { type: "string" },
    "commit-every": { type: "string" },
    json: { type: "boolean" },
    serve: { type: "boolean" },
    "no-token": { type: "boolean" },
    store: { type: "string" },
    procs: { type: "string" },
    rank: { type: "string" },
    "rank-from-env": { type: "boolean" },
    "manifest-pages": { type: "boolean" },
  });
  if (values.store !== undefined) return demoOnStore(values, io);
  for (const flag of ["procs", "rank", "rank-from-env"] as const) {
    if (values[flag] !== undefined) throw new UsageError(`--${flag} needs --store URL`);
  }
  if (positionals.length > 0)
    throw new UsageError(`demo takes no positional arguments, got ${positionals.join(" ")}`);
  if (values["no-token"] && !values.serve) throw new UsageError("--no-token goes with --serve");
  const profile = (values.profile ?? "diagnostic") as Profile;
  if (!PROFILES.includes(profile))
    throw new UsageError(
      `--profile must be one of ${PROFILES.join(", ")}, got ${JSON.stringify(values.profile)}`,
    );
  const grid = /^(\d+)x(\d+)$/.exec(values.grid ?? "180x360");
  if (!grid || Number(grid[1]) < 1 || Number(grid[2]) < 1)
    throw new UsageError(`--grid must be LATxLON (e.g. 180x360), got ${JSON.stringify(values.grid)}`);
  const records = intOption(values.records, "records", 48);
  const quiet = values.json === true;
  const summary = await runDemo(
    {
      ...(values.out === undefined ? {} : { out: values.out }),
      writers: intOption(values.writers, "writers", 4),
      records,
      profile,
      grid: { nLat: Number(grid[1]), nLon: Number(grid[2]) },
      commitEvery: intOption(values["commit-every"], "commit-every", 8),
      manifestPages: values["manifest-pages"] === true,
    },
    quiet ? { stdout: nullStream(), stderr: io.stderr } : io,
  );
  if (quiet) json(io, summary);
  const ok = summary.readback_ok && summary.verify_ok;
  if (ok && values.serve) return serveUntilStopped(summary.store, undefined, values["no-token"] === true, io);
  return ok ? EXIT.ok : EXIT.failed;
}

/** `demo --store URL` with writers as OS processes: `--procs N` starts them, or this process is one rank. */
async function demoOnStore(values: Record<string, string | boolean | undefined>, io: CliIo): Promise<number> {
  const str = (k: string) => values[k] as string | undefined;
  if (values.out !== undefined || values.serve !== undefined || values["no-token"] !== undefined)
    throw new UsageError(
      "--store writes to the URL given: --out, --serve and --no-token are for the local thread demo",
    );
  const modes = [values.procs !== undefined, values.rank !== undefined, values["rank-from-env"] === true];
  if (modes.filter(Boolean).length !== 1)
    throw new UsageError("--store needs exactly one of --procs N, --rank I, --rank-from-env");
  const common = ["store", "records", "grid", "commit-every", "profile"].flatMap((k) =>
    str(k) === undefined ? [] : [`--${k}`, str(k)!],
  );
  if (values.procs !== undefined) {
    return runDemoProcs(
      [
        ...common,
        ...(values.json ? ["--json"] : []),
        ...(values["manifest-pages"] ? ["--manifest-pages"] : []),
      ],
      intOption(str("procs"), "procs", 1),
      io,
    );
  }
  const grid = /^(\d+)x(\d+)$/.exec(str("grid") ?? "180x360");
  if (!grid || Number(grid[1]) < 1 || Number(grid[2]) < 1)
    throw new UsageError(`--grid must be LATxLON (e.g. 180x360), got ${JSON.stringify(str("grid"))}`);
  const profile = (str("profile") ?? "diagnostic") as Profile;
  if (!PROFILES.includes(profile)) throw new UsageError(`--profile must be one of ${PROFILES.join(", ")}`);
  const summary = await runDemoRank(
    {
      store: str("store")!,
      ...(values.rank === undefined ? {} : { rank: intOption(str("rank"), "rank", 0, 0) }),
      writers: intOption(str("writers"), "writers", 4),
      records: intOption(str("records"), "records", 48),
      profile,
      grid: { nLat: Number(grid[1]), nLon: Number(grid[2]) },
      commitEvery: intOption(str("commit-every"), "commit-every", 8),
      manifestPages: values["manifest-pages"] === true,
    },
    io,
  );
  if (summary.writer !== 0) return EXIT.ok;
  if (values.json) json(io, summary);
  else {
    io.stdout.write(
      [
        `store        ${summary.store}`,
        `records      ${summary.records} committed by ${summary.writers} writer processes (writer 0 started at record ${summary.resumed_at})`,
        `read back    ${summary.readback_ok ? "identical to what was written" : `${summary.mismatches?.length} MISMATCH(ES)`}`,
        ...(summary.mismatches ?? []).slice(0, 10).map((m) => `  ${m}`),
        `verify       ${summary.verify_ok ? "OK" : "FAILED"}`,
        `quicklook    ${summary.quicklook}`,
        "",
      ].join("\n"),
    );
  }
  return summary.readback_ok && summary.verify_ok ? EXIT.ok : EXIT.failed;
}

async function serveUntilStopped(
  storeDir: string,
  port: number | undefined,
  noToken: boolean,
  io: CliIo,
): Promise<number> {
  const server = await serveViewer(storeDir, {
    ...(port === undefined ? {} : { port }),
    ...(noToken ? { token: null } : {}),
  });
  if (noToken)
    io.stderr.write(
      `zstream serve: WARNING: --no-token: every user and process on this machine can read ${storeDir} through ${server.url}\n`,
    );
  // The URL carries the token once, here; the page trades it for a cookie on its first load.
  io.stdout.write(`viewer: ${server.pageUrl}  (serving ${storeDir}; Ctrl-C to stop)\n`);
  await new Promise<void>((done) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      void server.close().then(done);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  return EXIT.ok;
}

async function serve(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    port: { type: "string" },
    "no-token": { type: "boolean" },
  });
  const store = storeArgument(positionals, "serve");
  await requireStorePath(store);
  const port = values.port === undefined ? undefined : intOption(values.port, "port", 0);
  return serveUntilStopped(store, port, values["no-token"] === true, io);
}

/** `zstream recover STORE ...` is `zstream cp recover --store STORE ...`. */
async function recover(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    product: { type: "string" },
    reason: { type: "string" },
    "dry-run": { type: "boolean" },
    json: { type: "boolean" },
  });
  const store = storeArgument(positionals, "recover");
  return delegate(
    "cp",
    [
      "recover",
      "--store",
      store,
      ...(values.product === undefined ? [] : ["--product", values.product]),
      ...(values.reason === undefined ? [] : ["--reason", values.reason]),
      ...(values["dry-run"] ? ["--dry-run"] : []),
      ...(values.json ? ["--json"] : []),
    ],
    io,
  );
}

function nullStream(): CliIo["stdout"] {
  return { write: () => true } as unknown as CliIo["stdout"];
}

async function inspect(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, { json: { type: "boolean" } });
  const report = await inspectStore(await openExistingStore(storeArgument(positionals, "inspect")));
  if (values.json) json(io, report);
  else io.stdout.write(`${formatInspect(report)}\n`);
  return EXIT.ok;
}

async function verify(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    json: { type: "boolean" },
    deep: { type: "boolean" },
  });
  const store = await openExistingStore(storeArgument(positionals, "verify"));
  // Neither a manifest nor zarr.json: not a store to verify (a StoreError), rather than one problem.
  await storeKind(store);
  let progress: Progress | undefined;
  const report = await verifyStore(store, {
    deep: values.deep === true,
    onProgress: (_done, total) => {
      // only worth a bar when there is enough to wait for
      if (total < 200) return;
      progress ??= new Progress(io.stderr, "verifying shards", total, true);
      progress.tick(1);
    },
  });
  progress?.finish();
  if (values.json) json(io, report);
  else io.stdout.write(`${formatVerify(report)}\n`);
  return report.ok ? EXIT.ok : EXIT.failed;
}

async function plot(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, PLOT_OPTIONS);
  const storeUrl = storeArgument(positionals, "plot");
  const { request, defaultOut } = plotRequestOf(values);
  const out = await requireOutputFile(values.out ?? defaultOut);
  const r = await plotStore(await openExistingStore(storeUrl), request);
  try {
    // .svg: the vector document the PNG is rasterized from (fonts named, not embedded)
    await writeFile(out, out.toLowerCase().endsWith(".svg") ? r.svg : r.png);
  } catch (e) {
    throw outputWriteError(out, "--out", e);
  }
  io.stdout.write(`${out}  (${r.kind} ${r.width}x${r.height}, ${r.title}, range ${r.vmin} .. ${r.vmax})\n`);
  return EXIT.ok;
}

/**
 * `zstream manifest pages on|off STORE`: the store's manifest rewritten in the paged form or the seed's
 * (docs/manifest-pages.md), compare-and-swap; a store in that form already is left as it is.
 */
async function manifest(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, { json: { type: "boolean" } });
  const [what, state, ...rest] = positionals;
  if (what !== "pages")
    throw new UsageError(`manifest takes pages on|off STORE, got ${JSON.stringify(what ?? "")}`);
  if (state !== "on" && state !== "off")
    throw new UsageError(`manifest pages takes on or off, got ${JSON.stringify(state ?? "")}`);
  const storeUrl = storeArgument(rest, "manifest pages");
  const r = await setManifestPages(await openExistingStore(storeUrl), state === "on");
  if (values.json) json(io, { store: storeUrl, ...r });
  else
    io.stdout.write(
      r.changed
        ? `${storeUrl}: manifest ${r.from} -> ${r.to} (commit_seq ${r.commitSeq}, ${r.manifestBytes} bytes, ${r.pagesWritten} page(s) written)\n`
        : `${storeUrl}: manifest is ${r.to} already; nothing written\n`,
    );
  return EXIT.ok;
}

async function dump(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, {
    out: { type: "string" },
    case: { type: "string" },
    writer: { type: "string" },
  });
  const storeUrl = storeArgument(positionals, "dump");
  if (values.out === undefined) throw new UsageError("dump needs --out dump.json");
  const out = await requireOutputFile(values.out);
  const d = await dumpStore(await openExistingStore(storeUrl), {
    case: values.case ?? basename(storeUrl.replace(/\/+$/, "")).replace(/\.zarr$/, ""),
    writer: values.writer ?? "zarr-stream-ts",
  });
  try {
    await writeFile(out, `${JSON.stringify(d)}\n`);
  } catch (e) {
    throw outputWriteError(out, "--out", e);
  }
  io.stdout.write(
    `${out}  (${d.records.length} records, ${Object.keys(d.statics).length} statics, ${d.blobs.length} blobs)\n`,
  );
  return EXIT.ok;
}

/**
 * Commands other packages implement, loaded on use so zstream works without them. Each parses its own
 * arguments with node:util parseArgs after globalFlags took --help, --version and --debug; `usage` names
 * the exported help text that `zstream <command> --help` prints.
 */
const DELEGATES: Record<string, { module: string; fn: string; usage: string; io: (io: CliIo) => unknown }> = {
  journal: {
    module: "@zarr-stream/journal",
    fn: "runJournalCli",
    usage: "JOURNAL_USAGE",
    io: (io) => ({ stdout: io.stdout, stderr: io.stderr }),
  },
  conformance: {
    module: "@zarr-stream/conformance",
    fn: "runConformanceCli",
    usage: "CONFORMANCE_USAGE",
    io: (io) => ({
      stdout: (line: string) => io.stdout.write(`${line}\n`),
      stderr: (line: string) => io.stderr.write(`${line}\n`),
    }),
  },
  cp: {
    module: "@zarr-stream/controlplane",
    fn: "runControlPlaneCli",
    usage: "CONTROL_PLANE_USAGE",
    io: (io) => ({
      out: (text: string) => io.stdout.write(text),
      err: (text: string) => io.stderr.write(text),
      // A STORE that does not exist is named as such, never created by a cp command.
      openStore: (url: string) => openExistingStore(url),
    }),
  },
};

type DelegateFn = (argv: string[], io: unknown) => Promise<number>;

async function delegateModule(command: string): Promise<Record<string, unknown>> {
  const { module, fn } = DELEGATES[command]!;
  try {
    return (await import(module)) as Record<string, unknown>;
  } catch {
    throw new UsageError(
      `zstream ${command} is not available: ${module} does not export ${fn} in this build`,
    );
  }
}

async function delegate(command: string, argv: string[], io: CliIo): Promise<number> {
  const { module, fn } = DELEGATES[command]!;
  const run = (await delegateModule(command))[fn];
  if (typeof run !== "function")
    throw new UsageError(
      `zstream ${command} is not available: ${module} does not export ${fn} in this build`,
    );
  return (run as DelegateFn)(argv, DELEGATES[command]!.io(io));
}

/** Prints the help of zstream, one of its commands, or a delegated command (its package's usage text). */
async function help(io: CliIo, command?: string): Promise<number> {
  if (command === undefined) io.stdout.write(MAIN_HELP);
  else if (command in HELP) io.stdout.write(HELP[command]!);
  else if (command in DELEGATES) {
    const usage = (await delegateModule(command))[DELEGATES[command]!.usage];
    io.stdout.write(
      typeof usage === "string" ? `${usage.trimEnd()}\n` : `zstream ${command}: no help text\n`,
    );
  } else throw new UsageError(`no command ${JSON.stringify(command)} to show help for (try zstream --help)`);
  return EXIT.ok;
}

const COMMANDS: Record<string, (argv: string[], io: CliIo) => Promise<number>> = {
  demo,
  inspect,
  verify,
  plot,
  dump,
  manifest,
  serve,
  recover,
};

function oneLine(e: unknown): string {
  const text = e instanceof Error ? `${e.name === "UsageError" ? "" : `${e.name}: `}${e.message}` : String(e);
  return text.replace(/\s*\n\s*/g, " ");
}

/** Commands whose --json answers an error with a JSON object on stdout as well as the line on stderr. */
const JSON_ERRORS = new Set(["inspect", "verify", "demo"]);

function exitCodeOf(e: unknown): number {
  if (e instanceof UsageError) return EXIT.usage;
  return e instanceof ZarrStreamError ? EXIT.error : EXIT.internal;
}

/**
 * Runs `zstream argv...`; never throws: errors become one line on stderr and an exit code. --help, -h,
 * --version and --debug are taken anywhere (globalFlags), for every command and subcommand.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const flags = globalFlags(argv);
  const [command, ...rest] = flags.rest;
  try {
    if (flags.version) {
      io.stdout.write(`zstream ${VERSION}\n`);
      return EXIT.ok;
    }
    if (command === undefined) return await help(io);
    if (command === "help") {
      if (rest.length > 1) throw new UsageError(`help takes one command, got ${rest.join(" ")}`);
      return await help(io, rest[0]);
    }
    if (!(command in COMMANDS) && !(command in DELEGATES))
      throw new UsageError(`unknown command ${JSON.stringify(command)} (try zstream --help)`);
    if (flags.help) return await help(io, command);
    if (command in DELEGATES) return await delegate(command, rest, io);
    return await COMMANDS[command]!(rest, io);
  } catch (e) {
    const where = command && (command in COMMANDS || command in DELEGATES) ? `zstream ${command}` : "zstream";
    const code = exitCodeOf(e);
    io.stderr.write(`${where}: ${oneLine(e)}\n`);
    if (flags.debug && e instanceof Error && e.stack) io.stderr.write(`${e.stack}\n`);
    if (flags.json && command !== undefined && JSON_ERRORS.has(command)) {
      const name = e instanceof Error ? e.name : "Error";
      const message = e instanceof Error ? e.message : String(e);
      json(io, { error: { name, message, exit_code: code } });
    }
    return code;
  }
}

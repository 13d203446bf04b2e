import { writeFile } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type Profile, ZarrStreamError } from "@zarr-stream/spec";
import { openStore } from "@zarr-stream/store";
import { serveViewer } from "@zarr-stream/viewer";
import { asUsage, intOption, storeArgument, UsageError } from "./args.js";
import { runDemoProcs, runDemoRank } from "./demo/ranks.js";
import { runDemo } from "./demo/run.js";
import { dumpStore } from "./dump.js";
import { HELP, MAIN_HELP } from "./help.js";
import { formatInspect, inspectStore } from "./inspect.js";
import type { CliIo } from "./io.js";
import { PICTURE_OPTIONS, parseSlices, pictureOptions } from "./picture/options.js";
import { plotStore } from "./plot/plot.js";
import { Progress } from "./progress.js";
import { formatVerify, verifyStore } from "./verify.js";

/** Exit codes, documented in the README. */
export const EXIT = { ok: 0, failed: 1, usage: 2, error: 3, internal: 4 } as const;

const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const;
const PROFILES: Profile[] = ["diagnostic", "checkpoint", "wasm"];

function json(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

async function demo(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        ...HELP_OPTION,
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
      },
    }),
  );
  if (values.help) return help(io, "demo");
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
      [...common, ...(values.json ? ["--json"] : [])],
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
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...HELP_OPTION, port: { type: "string" }, "no-token": { type: "boolean" } },
    }),
  );
  if (values.help) return help(io, "serve");
  const store = storeArgument(positionals, "serve");
  const port = values.port === undefined ? undefined : intOption(values.port, "port", 0);
  return serveUntilStopped(store, port, values["no-token"] === true, io);
}

/** `zstream recover STORE ...` is `zstream cp recover --store STORE ...`. */
async function recover(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) return help(io, "recover");
  const [store, ...rest] = argv;
  if (store === undefined || store.startsWith("-"))
    throw new UsageError("recover takes a STORE argument (a directory or URL)");
  return delegate("cp", ["recover", "--store", store, ...rest], io);
}

function nullStream(): CliIo["stdout"] {
  return { write: () => true } as unknown as CliIo["stdout"];
}

async function inspect(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = asUsage(() =>
    parseArgs({ args: argv, allowPositionals: true, options: { ...HELP_OPTION, json: { type: "boolean" } } }),
  );
  if (values.help) return help(io, "inspect");
  const report = await inspectStore(openStore(storeArgument(positionals, "inspect")));
  if (values.json) json(io, report);
  else io.stdout.write(`${formatInspect(report)}\n`);
  return EXIT.ok;
}

async function verify(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...HELP_OPTION, json: { type: "boolean" }, deep: { type: "boolean" } },
    }),
  );
  if (values.help) return help(io, "verify");
  const store = openStore(storeArgument(positionals, "verify"));
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
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        ...HELP_OPTION,
        var: { type: "string" },
        record: { type: "string" },
        slice: { type: "string", multiple: true },
        out: { type: "string" },
        ...PICTURE_OPTIONS,
      },
    }),
  );
  if (values.help) return help(io, "plot");
  const storeUrl = storeArgument(positionals, "plot");
  if (values.var === undefined) throw new UsageError("plot needs --var V");
  const record = values.record === undefined ? undefined : intOption(values.record, "record", 0, 0);
  if (values.series && record !== undefined)
    throw new UsageError("--series plots every committed record: it takes no --record");
  const slices = parseSlices(values.slice);
  const picture = pictureOptions(values);
  const which = values.series ? "-series" : record === undefined ? "" : `-${record}`;
  const out = resolve(values.out ?? `${values.var}${which}.png`);
  const r = await plotStore(openStore(storeUrl), {
    variable: values.var,
    ...(record === undefined ? {} : { record }),
    slices,
    series: values.series === true,
    ...picture,
  });
  // .svg: the vector document the PNG is rasterized from (fonts named, not embedded)
  await writeFile(out, out.toLowerCase().endsWith(".svg") ? r.svg : r.png);
  io.stdout.write(`${out}  (${r.kind} ${r.width}x${r.height}, ${r.title}, range ${r.vmin} .. ${r.vmax})\n`);
  return EXIT.ok;
}

async function dump(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = asUsage(() =>
    parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        ...HELP_OPTION,
        out: { type: "string" },
        case: { type: "string" },
        writer: { type: "string" },
      },
    }),
  );
  if (values.help) return help(io, "dump");
  const storeUrl = storeArgument(positionals, "dump");
  if (values.out === undefined) throw new UsageError("dump needs --out dump.json");
  const d = await dumpStore(openStore(storeUrl), {
    case: values.case ?? basename(storeUrl.replace(/\/+$/, "")).replace(/\.zarr$/, ""),
    writer: values.writer ?? "zarr-stream-ts",
  });
  await writeFile(values.out, `${JSON.stringify(d)}\n`);
  io.stdout.write(
    `${resolve(values.out)}  (${d.records.length} records, ${Object.keys(d.statics).length} statics, ${d.blobs.length} blobs)\n`,
  );
  return EXIT.ok;
}

/** Commands other packages implement, loaded on use so zstream works without them. */
const DELEGATES: Record<string, { module: string; fn: string; io: (io: CliIo) => unknown }> = {
  journal: {
    module: "@zarr-stream/journal",
    fn: "runJournalCli",
    io: (io) => ({ stdout: io.stdout, stderr: io.stderr }),
  },
  conformance: {
    module: "@zarr-stream/conformance",
    fn: "runConformanceCli",
    io: (io) => ({
      stdout: (line: string) => io.stdout.write(`${line}\n`),
      stderr: (line: string) => io.stderr.write(`${line}\n`),
    }),
  },
  cp: {
    module: "@zarr-stream/controlplane",
    fn: "runControlPlaneCli",
    io: (io) => ({
      out: (text: string) => io.stdout.write(text),
      err: (text: string) => io.stderr.write(text),
      openStore,
    }),
  },
};

type DelegateFn = (argv: string[], io: unknown) => Promise<number>;

async function delegate(command: string, argv: string[], io: CliIo): Promise<number> {
  const { module, fn } = DELEGATES[command]!;
  let run: DelegateFn | undefined;
  try {
    const mod = (await import(module)) as Record<string, unknown>;
    run = typeof mod[fn] === "function" ? (mod[fn] as DelegateFn) : undefined;
  } catch {
    run = undefined;
  }
  if (run === undefined)
    throw new UsageError(
      `zstream ${command} is not available: ${module} does not export ${fn} in this build`,
    );
  return run(argv, DELEGATES[command]!.io(io));
}

function help(io: CliIo, command?: string): number {
  io.stdout.write(command === undefined ? MAIN_HELP : HELP[command]!);
  return EXIT.ok;
}

const COMMANDS: Record<string, (argv: string[], io: CliIo) => Promise<number>> = {
  demo,
  inspect,
  verify,
  plot,
  dump,
  serve,
  recover,
};

function oneLine(e: unknown): string {
  const text = e instanceof Error ? `${e.name === "UsageError" ? "" : `${e.name}: `}${e.message}` : String(e);
  return text.replace(/\s*\n\s*/g, " ");
}

/** Runs `zstream argv...`; never throws: errors become one line on stderr and an exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const debug = argv.includes("--debug");
  const args = argv.filter((a) => a !== "--debug");
  const [command, ...rest] = args;
  try {
    if (command === undefined || command === "--help" || command === "-h" || command === "help") {
      if (command === "help" && rest[0] !== undefined && rest[0] in HELP) return help(io, rest[0]);
      return help(io);
    }
    if (command in DELEGATES) return await delegate(command, rest, io);
    const run = COMMANDS[command];
    if (run === undefined)
      throw new UsageError(`unknown command ${JSON.stringify(command)} (try zstream --help)`);
    return await run(rest, io);
  } catch (e) {
    const where = command && (command in COMMANDS || command in DELEGATES) ? `zstream ${command}` : "zstream";
    io.stderr.write(`${where}: ${oneLine(e)}\n`);
    if (debug && e instanceof Error && e.stack) io.stderr.write(`${e.stack}\n`);
    if (e instanceof UsageError) return EXIT.usage;
    return e instanceof ZarrStreamError ? EXIT.error : EXIT.internal;
  }
}

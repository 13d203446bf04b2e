import { createRequire } from "node:module";
import { type ParseArgsConfig, parseArgs } from "node:util";

/**
 * The one argument parser of zstream: node:util parseArgs, for every command and the commands other
 * packages implement (they call parseArgs on what is left after globalFlags). Nothing else reads argv.
 */

/** A command line that does not parse or names nothing usable: exit code 2, and the message names the option. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type Options = NonNullable<ParseArgsConfig["options"]>;

/** The version every command's --version prints: this package's. */
export const VERSION: string = (createRequire(import.meta.url)("../../package.json") as { version: string })
  .version;

/**
 * Flags every command takes, its own or delegated, anywhere before a `--`: --help/-h, --version, --debug.
 * `json` only reports whether --json is there (the command still parses it), so an error can be answered
 * in JSON before the command's own parse has run.
 */
const GLOBAL_OPTIONS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  debug: { type: "boolean" },
  json: { type: "boolean" },
} as const;

export interface GlobalFlags {
  help: boolean;
  version: boolean;
  debug: boolean;
  json: boolean;
  /** argv without --help, -h, --version and --debug. */
  rest: string[];
}

/** Takes the global flags out of argv (a lenient parseArgs pass: the command's own parse is strict). */
export function globalFlags(argv: string[]): GlobalFlags {
  const { tokens } = parseArgs({
    args: argv,
    options: GLOBAL_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const found = { help: false, version: false, debug: false, json: false };
  const drop = new Set<number>();
  for (const t of tokens) {
    if (t.kind !== "option" || !(t.name in found)) continue;
    found[t.name as keyof typeof found] = true;
    if (t.name !== "json") drop.add(t.index);
  }
  return { ...found, rest: argv.filter((_, i) => !drop.has(i)) };
}

/**
 * `--record -1` reads as `--record=-1` for an option that takes a value: parseArgs alone calls the
 * negative number ambiguous, and the option's own check then names the real problem (a negative index).
 */
function joinNegativeValues(argv: string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") return [...out, ...argv.slice(i)];
    const name = a.startsWith("--") ? a.slice(2) : undefined;
    const next = argv[i + 1];
    if (name !== undefined && options[name]?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** Runs parseArgs (strict) with its errors turned into a one-line UsageError. */
export function parseCommand<O extends Options>(
  argv: string[],
  options: O,
): ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>> {
  try {
    return parseArgs({
      args: joinNegativeValues(argv, options),
      options,
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message.split("\n")[0] ?? String(err));
  }
}

/** An integer option >= min (default when absent); anything else is a UsageError naming the option. */
export function intOption(value: string | undefined, name: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** The single STORE positional every store command takes. */
export function storeArgument(positionals: string[], command: string): string {
  if (positionals.length === 0)
    throw new UsageError(`${command} needs a STORE (a directory, file:// or s3:// URL)`);
  if (positionals.length > 1)
    throw new UsageError(`${command} takes one STORE, got ${positionals.length}: ${positionals.join(" ")}`);
  return positionals[0]!;
}

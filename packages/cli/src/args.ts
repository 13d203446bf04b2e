/** A command line that does not parse: exit code 2, and the message names the option. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Runs a node:util parseArgs call with its errors turned into UsageError (one line, no stack). */
export function asUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new UsageError((err as Error).message.split("\n")[0] ?? String(err));
  }
}

export function intOption(value: string | undefined, name: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** The single STORE positional every read command takes. */
export function storeArgument(positionals: string[], command: string): string {
  if (positionals.length === 0) throw new UsageError(`${command} needs a STORE (a directory or file:// URL)`);
  if (positionals.length > 1)
    throw new UsageError(`${command} takes one STORE, got ${positionals.length}: ${positionals.join(" ")}`);
  return positionals[0]!;
}

/**
 * Deterministic interleavings of a reader with a writer: a store wrapper that runs a callback exactly
 * between a reader's index read of a shard and its body reads (or, with `reads`, after any read of a key,
 * such as the manifest read that precedes a read's shard reads). Structural (it imports no project
 * package): it wraps any store whose index reads are getSuffix / getSuffixInto, plain or through pin.
 */

type AnyFn = (...args: never[]) => unknown;
const SUFFIX_READS = new Set(["getSuffix", "getSuffixInto"]);

export interface InterleaveOptions {
  /** How many index reads of the key run `between` (default 1; Infinity: every one). */
  times?: number;
  /**
   * The readCost the wrapper declares. "cheap" keeps a reader's first read to a small window, so the
   * bodies of a shard of a few hundred KB are read separately from its index on any backend.
   */
  readCost?: "cheap" | "per-request";
  /**
   * The store methods whose reads of the key run `between` (default: the suffix reads, a shard's index
   * read). ["get", "getVersioned"] holds a whole-object read such as the manifest's.
   */
  reads?: readonly string[];
}

/**
 * `inner` with `between` run after an index read (a suffix read) of `key` has its bytes and before they
 * are handed to the reader, on the first `times` such reads. Every other call goes to `inner` as is.
 * `ran()` says how many times `between` ran.
 */
export function interleaved<S extends object>(
  inner: S,
  key: string,
  between: () => Promise<void>,
  options: InterleaveOptions = {},
): { store: S; ran(): number } {
  let ran = 0;
  const times = options.times ?? 1;
  const reads = new Set(options.reads ?? SUFFIX_READS);
  /** A suffix read of `k` whose answer waits for `between` when it is one of the first `times`. */
  const hold =
    (fn: AnyFn, self: object, k: string | undefined) =>
    async (...args: unknown[]): Promise<unknown> => {
      const got = await (fn as (...a: unknown[]) => unknown).apply(self, args);
      const readKey = k ?? args[0];
      if (readKey === key && got !== undefined && ran < times) {
        ran++;
        await between();
      }
      return got;
    };
  const wrapPinned = (pinned: object & { key: string }) =>
    new Proxy(pinned, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        if (reads.has(String(prop))) return hold(value as AnyFn, target, target.key);
        return (value as AnyFn).bind(target);
      },
    });
  const store = new Proxy(inner, {
    get(target, prop) {
      if (prop === "readCost" && options.readCost !== undefined) return options.readCost;
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (reads.has(String(prop))) return hold(value as AnyFn, target, undefined);
      if (prop === "pin")
        return (k: string) => wrapPinned((value as (k: string) => object & { key: string }).call(target, k));
      return (value as AnyFn).bind(target);
    },
  });
  return { store, ran: () => ran };
}

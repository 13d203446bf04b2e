import { StoreError, StoreFull } from "@zarr-stream/spec";

export function errorCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "code" in err ? String(err.code) : undefined;
}

export function isAbsent(err: unknown): boolean {
  const code = errorCode(err);
  return code === "ENOENT" || code === "ENOTDIR";
}

export function fsError(action: string, key: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const code = errorCode(cause) ?? (cause instanceof Error ? cause.message : String(cause));
  return new StoreError(`FsStore ${action} ${JSON.stringify(key)} failed: ${code}`, key, { cause });
}

/** ENOSPC or EDQUOT, when `err` or an error it was caused by is one. */
function fullCode(err: unknown): "ENOSPC" | "EDQUOT" | undefined {
  for (let e = err, depth = 0; typeof e === "object" && e !== null && depth < 8; depth++) {
    const code = errorCode(e);
    if (code === "ENOSPC" || code === "EDQUOT") return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * `err` as StoreFull when the file system ran out of space or quota somewhere in a write of `key` (the
 * staging file, the lock file, a new directory, a link): `path` is the object's file. Else `err`.
 */
export function fullOr(action: string, key: string, path: string, err: unknown): unknown {
  const code = fullCode(err);
  if (code === undefined || err instanceof StoreFull) return err;
  const why = code === "ENOSPC" ? "is full" : "is over its quota";
  return new StoreFull(
    `FsStore ${action} ${JSON.stringify(key)}: the file system holding ${path} ${why} (${code}); the object is unchanged: free space and write again`,
    key,
    path,
    code,
    { cause: err },
  );
}

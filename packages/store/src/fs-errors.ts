import { StoreError } from "@zarr-stream/spec";

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

import { StoreError } from "@zarr-stream/spec";

/** FsStore stages writes in files whose names start with this; they are never objects. */
export const TEMP_PREFIX = ".zs-tmp-";

/**
 * The Store key rules (relative, "/"-separated, no empty, "." or ".." segment, no NUL or backslash, no
 * staging-file segment). The viewer checks them itself because it must run in a browser, where the
 * store package's FsStore cannot be bundled.
 */
export function keyProblem(key: string): string | undefined {
  if (typeof key !== "string") return `must be a string, got ${typeof key}`;
  if (key === "") return "is empty";
  if (key.startsWith("/")) return "is absolute";
  if (key.includes("\0")) return "contains NUL";
  if (key.includes("\\")) return "contains a backslash";
  for (const segment of key.split("/")) {
    if (segment === "") return "has an empty segment";
    if (segment === "." || segment === "..") return `has a "${segment}" segment`;
    if (segment.startsWith(TEMP_PREFIX)) return `has a segment starting with "${TEMP_PREFIX}"`;
  }
  return undefined;
}

export function assertValidKey(key: string): void {
  const bad = keyProblem(key);
  if (bad !== undefined) throw new StoreError(`store key ${JSON.stringify(key)} ${bad}`, String(key));
}

/** A list prefix may end mid-segment, so only the segments before its last "/" follow the key rules. */
export function assertValidPrefix(prefix: string): void {
  if (typeof prefix !== "string")
    throw new StoreError(`list prefix must be a string, got ${typeof prefix}`, String(prefix));
  const cut = prefix.lastIndexOf("/");
  if (cut < 0) {
    if (prefix.includes("\0") || prefix.includes("\\"))
      throw new StoreError(`list prefix ${JSON.stringify(prefix)} contains NUL or a backslash`, prefix);
    return;
  }
  const bad = keyProblem(`${prefix.slice(0, cut)}/x`);
  if (bad !== undefined) throw new StoreError(`list prefix ${JSON.stringify(prefix)} ${bad}`, prefix);
}

export function assertByteCount(what: string, value: number, key: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new StoreError(
      `${what} for ${JSON.stringify(key)} must be a non-negative integer, got ${value}`,
      key,
    );
  }
}

/** The URL path of a key: each segment percent-encoded, so "#", "?" and "%" in keys survive. */
export function keyToUrlPath(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

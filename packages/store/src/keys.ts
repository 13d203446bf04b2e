import { StoreError } from "@zarr-stream/spec";

/**
 * Every staging file starts with this. Data keys may not have a segment starting with it, so a staging
 * file can never collide with (or be listed as) an object, whatever the caller names its keys.
 */
export const TEMP_PREFIX = ".zs-tmp-";

function segmentProblem(segment: string): string | undefined {
  if (segment === "") return "has an empty segment";
  if (segment === "." || segment === "..") return `has a "${segment}" segment`;
  if (segment.startsWith(TEMP_PREFIX)) return `has a segment starting with the reserved "${TEMP_PREFIX}"`;
  return undefined;
}

function characterProblem(text: string): string | undefined {
  if (text.includes("\0")) return "contains NUL";
  if (text.includes("\\")) return "contains a backslash";
  return undefined;
}

/**
 * Why `key` is not a store key ("is empty", "has a \"..\" segment", ...), or undefined when it is one.
 * Keys are confined lexically: a key that passes can only name a path strictly inside the store root,
 * on every backend, so every store accepts and refuses exactly the same keys.
 */
export function keyProblem(key: string): string | undefined {
  if (typeof key !== "string") return `must be a string, got ${typeof key}`;
  if (key === "") return "is empty";
  if (key.startsWith("/")) return "is absolute";
  return characterProblem(key) ?? firstSegmentProblem(key.split("/"));
}

/** A StoreError naming the key when it is not a store key (see keyProblem). */
export function assertValidKey(key: string): void {
  const bad = keyProblem(key);
  if (bad === undefined) return;
  const quoted = typeof key === "string" && key !== "" ? ` ${JSON.stringify(key)}` : "";
  throw new StoreError(`store key${quoted} ${bad}`, String(key));
}

/**
 * A list prefix may end mid-segment ("temp" matches "temperature/..."), so only the segments before its
 * last "/" are held to the key rules; the trailing fragment is only ever compared as a string.
 */
export function assertValidPrefix(prefix: string): void {
  if (typeof prefix !== "string") {
    throw new StoreError(`list prefix must be a string, got ${typeof prefix}`, String(prefix));
  }
  if (prefix === "") return;
  if (prefix.startsWith("/"))
    throw new StoreError(`list prefix ${JSON.stringify(prefix)} is absolute`, prefix);
  const segments = prefix.split("/");
  segments.pop();
  const bad = characterProblem(prefix) ?? firstSegmentProblem(segments);
  if (bad !== undefined) throw new StoreError(`list prefix ${JSON.stringify(prefix)} ${bad}`, prefix);
}

function firstSegmentProblem(segments: string[]): string | undefined {
  for (const segment of segments) {
    const bad = segmentProblem(segment);
    if (bad !== undefined) return bad;
  }
  return undefined;
}

/** Offsets and lengths are byte counts: non-negative safe integers, checked before any I/O. */
export function assertByteCount(what: string, value: number, key: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new StoreError(
      `${what} for ${JSON.stringify(key)} must be a non-negative integer, got ${value}`,
      key,
    );
  }
}

export function assertBytes(bytes: Uint8Array, key: string): void {
  if (!(bytes instanceof Uint8Array)) {
    throw new StoreError(`value for ${JSON.stringify(key)} must be a Uint8Array`, key);
  }
}

/** putIfVersion's `expected`: null (must be absent) or a version tag a store handed out. */
export function assertExpectedVersion(expected: string | null, key: string): void {
  if (expected !== null && (typeof expected !== "string" || expected === "")) {
    throw new StoreError(
      `putIfVersion(${JSON.stringify(key)}): expected version must be a non-empty string or null, got ${JSON.stringify(expected)}`,
      key,
    );
  }
}

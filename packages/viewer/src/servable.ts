/**
 * Whether the viewer server hands out `key` (a valid store key): only objects the zarr-stream layout
 * defines, under any directory of the served root (one root may hold several stores), so a store kept
 * in a home directory or beside a project does not serve `.ssh/id_rsa`, `.env` or notes.txt with it:
 *
 * - `zarr.json` (group and array metadata) and `output_manifest.json` (the commit point);
 * - `.zarr-stream/manifest/<list>/<sha256>.json`, the manifest's pages;
 * - chunk and shard keys `<array>/c` and `<array>/c/<i>/<j>/…` (Zarr v3's default chunk key encoding);
 * - `blobs/static/<writer>/<key…>` and `blobs/record/<record>/<writer>/<key…>`.
 *
 * Outside those, a segment starting with "." is never served: writer leases and other state under
 * `.zarr-stream/`, `.firecube`, `.git`. Commit tokens (`_tokens/`) are the writers' protocol state,
 * which the page does not read, and are not served either.
 */
export function servableKey(key: string): boolean {
  const segments = key.split("/");
  const n = segments.length;
  const last = segments[n - 1]!;
  if (last === "zarr.json" || last === "output_manifest.json") return plain(segments, n - 1);
  // .zarr-stream/manifest/<list>/<sha256>.json
  if (n >= 4 && segments[n - 4] === ".zarr-stream" && segments[n - 3] === "manifest")
    return /^[a-z_]+$/.test(segments[n - 2]!) && /^[0-9a-f]{64}\.json$/.test(last) && plain(segments, n - 4);
  const c = chunkStart(segments);
  if (c >= 0) return plain(segments, c);
  const b = segments.indexOf("blobs");
  if (b >= 0 && plain(segments, b)) {
    const [kind, x, y, ...rest] = segments.slice(b + 1);
    if (kind === "static") return number(x) && y !== undefined;
    if (kind === "record") return number(x) && number(y) && rest.length > 0;
  }
  return false;
}

/** The index of "c" in `…/c` or `…/c/<i>/<j>/…` (only numbers after it), else -1. */
function chunkStart(segments: string[]): number {
  let i = segments.length - 1;
  while (i >= 0 && number(segments[i])) i--;
  return i >= 0 && segments[i] === "c" ? i : -1;
}

function number(segment: string | undefined): boolean {
  return segment !== undefined && /^\d+$/.test(segment);
}

/** No segment of segments[0..end) is hidden. */
function plain(segments: string[], end: number): boolean {
  return segments.slice(0, end).every((s) => !s.startsWith("."));
}

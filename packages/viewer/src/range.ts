/** What to send for a request's Range header against an object of `size` bytes (RFC 9110 §14). */
export type RangeAnswer =
  | { kind: "full" }
  | { kind: "partial"; start: number; end: number }
  | { kind: "unsatisfiable" };

/**
 * One `bytes=a-b`, `bytes=a-` or `bytes=-n` range. A header that is absent, malformed, names another
 * unit or several ranges is ignored (the whole object is sent), as RFC 9110 allows; a well-formed range
 * that starts at or past the end, or a zero-length suffix, is unsatisfiable (416).
 */
export function answerRange(header: string | undefined, size: number): RangeAnswer {
  if (header === undefined) return { kind: "full" };
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return { kind: "full" };
  const first = m[1] === "" ? undefined : Number(m[1]);
  const last = m[2] === "" ? undefined : Number(m[2]);
  if (first === undefined) {
    const n = last!;
    if (n === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "partial", start: Math.max(0, size - n), end: size - 1 };
  }
  if (last !== undefined && last < first) return { kind: "full" };
  if (first >= size) return { kind: "unsatisfiable" };
  return { kind: "partial", start: first, end: Math.min(last ?? size - 1, size - 1) };
}

/**
 * For a committed-state list made from the previous state's list by replacing or appending a few
 * entries: which list, and at which positions. Lists are never changed once made (a commit copies
 * them), so a consumer that saw the previous list can look at the changed positions only.
 */
const lineage = new WeakMap<readonly object[], { prev: readonly object[]; changed: number[] }>();

export function noteChanges(
  prev: readonly object[],
  next: readonly object[],
  changed: Iterable<number>,
): void {
  lineage.set(next, { prev, changed: [...changed] });
}

/** The positions at which `next` differs from `prev`, when `next` was made from `prev` by one change. */
export function changedSince(
  next: readonly object[],
  prev: readonly object[] | undefined,
): readonly number[] | undefined {
  if (next === prev) return [];
  const step = lineage.get(next);
  return step !== undefined && step.prev === prev ? step.changed : undefined;
}

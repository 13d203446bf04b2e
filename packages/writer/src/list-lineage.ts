/**
 * For a committed-state list made from the previous state's list by replacing or appending a few
 * entries: which list, and at which positions. Lists are never changed once made (a commit copies
 * them), so a consumer that saw the previous list can look at the changed positions only.
 */
const lineage = new WeakMap<readonly object[], { prev: WeakRef<readonly object[]>; changed: number[] }>();

export function noteChanges(
  prev: readonly object[],
  next: readonly object[],
  changed: Iterable<number>,
): void {
  // The step holds its predecessor weakly: a strong link would chain every list ever made to the newest
  // one, keeping all of them alive while the newest is.
  lineage.set(next, { prev: new WeakRef(prev), changed: [...changed] });
}

/** The positions at which `next` differs from `prev`, when `next` was made from `prev` by one change. */
export function changedSince(
  next: readonly object[],
  prev: readonly object[] | undefined,
): readonly number[] | undefined {
  if (next === prev) return [];
  const step = lineage.get(next);
  return prev !== undefined && step?.prev.deref() === prev ? step.changed : undefined;
}

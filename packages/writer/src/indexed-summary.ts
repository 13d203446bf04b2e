import { indexedTimeShards, type TimeShardEntry } from "@zarr-stream/spec";
import type { EntryList } from "./record-entries.js";

/**
 * What an indexed store's manifest derives from its record entries: the committed count, the last
 * committed index (whose t is last_t, since times increase) and the time shard summary.
 */
interface Summary {
  committed: number;
  lastIndex: number;
  shardT: number;
  timeShards: TimeShardEntry[];
}

/**
 * Summaries by entries list. A committed state never changes its entries in place (a commit makes new
 * ones, record-entries.ts), so a commit carries the summary over by looking only at the records it
 * changed: its cost does not grow with the time axis.
 */
const summaries = new WeakMap<EntryList, Summary>();

export function indexedSummary(entries: EntryList, shardT: number): Summary {
  const cached = summaries.get(entries);
  if (cached !== undefined && cached.shardT === shardT) return cached;
  let committed = 0;
  let lastIndex = -1;
  const all = Array.from({ length: entries.length }, (_, i) => entries.at(i)!);
  for (let i = 0; i < all.length; i++) {
    if (!all[i]!.committed) continue;
    committed++;
    lastIndex = i;
  }
  const summary = { committed, lastIndex, shardT, timeShards: indexedTimeShards(all, shardT) };
  summaries.set(entries, summary);
  return summary;
}

/** The shard's summary entry from the entries, or undefined when it holds no committed record. */
function shardEntry(entries: EntryList, index: number, shardT: number): TimeShardEntry | undefined {
  const end = Math.min(entries.length, (index + 1) * shardT);
  let out: TimeShardEntry | undefined;
  for (let i = index * shardT; i < end; i++) {
    const e = entries.at(i)!;
    if (!e.committed) continue;
    if (out === undefined) out = { index, t_start: e.t, t_end: e.t, n: 1 };
    else {
      out.t_end = e.t;
      out.n += 1;
    }
  }
  return out;
}

/** Position of the first time shard whose index is >= `index`. */
function lowerBound(shards: readonly TimeShardEntry[], index: number): number {
  let lo = 0;
  let hi = shards.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (shards[mid]!.index < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `next` is `prev` with the entries at `changed` replaced: derives its summary from prev's (when prev's
 * is known) by recomputing only the time shards those records fall in.
 */
export function carrySummary(prev: EntryList, next: EntryList, changed: Iterable<number>): void {
  const indices = [...new Set(changed)];
  const before = summaries.get(prev);
  if (before === undefined) return;
  const { shardT } = before;
  let committed = before.committed;
  let lastIndex = before.lastIndex;
  let lostLast = false;
  const shards = new Set<number>();
  for (const i of indices) {
    const was = prev.at(i)!.committed;
    const is = next.at(i)!.committed;
    committed += Number(is) - Number(was);
    if (is && i > lastIndex) lastIndex = i;
    if (!is && i === before.lastIndex) lostLast = true;
    shards.add(Math.floor(i / shardT));
  }
  if (lostLast && lastIndex === before.lastIndex) {
    while (lastIndex >= 0 && !next.at(lastIndex)!.committed) lastIndex--;
  }
  const timeShards = before.timeShards.slice();
  for (const index of [...shards].sort((a, b) => a - b)) {
    const at = lowerBound(timeShards, index);
    const entry = shardEntry(next, index, shardT);
    const present = timeShards[at]?.index === index;
    if (entry && present) timeShards[at] = entry;
    else if (entry) timeShards.splice(at, 0, entry);
    else if (present) timeShards.splice(at, 1);
  }
  summaries.set(next, { committed, lastIndex, shardT, timeShards });
}

/** The committed count of an indexed store's entries. */
export function committedEntries(entries: EntryList): number {
  const cached = summaries.get(entries);
  if (cached !== undefined) return cached.committed;
  let n = 0;
  for (let i = 0; i < entries.length; i++) if (entries.at(i)!.committed) n++;
  return n;
}

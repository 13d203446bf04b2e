import { CommitError, type ManifestBlob, type RecordEntry } from "@zarr-stream/spec";
import type { VerifiedCommit } from "./commit-check.js";
import { carrySummary, committedEntries } from "./indexed-summary.js";
import { noteChanges } from "./list-lineage.js";
import { type CommittedState, compareBlobs } from "./manifest-doc.js";

/**
 * The owner's committed state after one verified commit (seed §5.3): records become committed (append:
 * the count grows and the time shard entries follow; indexed: per-record generation), statics and blobs
 * join the committed sets, commit_seq increments. Pure: the caller writes it out as the manifest.
 */
/**
 * The next state's own lists, sharing the entries: an entry is never changed in place but replaced, and
 * the record entries are immutable blocks (record-entries.ts), so a commit costs the size of its change
 * plus the blocks it touches, and the manifest pager can tell an unchanged page by identity.
 */
function nextState(state: CommittedState): CommittedState {
  return {
    ...state,
    timeShards: state.timeShards.slice(),
    staticsCommitted: state.staticsCommitted.slice(),
    blobs: state.blobs.slice(),
  };
}

export function applyCommit(state: CommittedState, verified: VerifiedCommit, shardT: number): CommittedState {
  const next = nextState(state);
  if (state.entries) {
    const changes = new Map<number, RecordEntry>();
    for (const r of verified.records) {
      const generation = (changes.get(r.index) ?? state.entries.at(r.index)!).generation + 1;
      changes.set(r.index, { committed: true, t: r.t, generation });
    }
    next.entries = state.entries.with(changes);
    carrySummary(state.entries, next.entries, changes.keys());
  } else if (verified.records.length > 0) {
    const changed = new Set<number>();
    for (const r of verified.records) {
      const index = Math.floor(r.index / shardT);
      // Append commits land in the open (last) time shards: search from the end.
      let at = next.timeShards.findLastIndex((e) => e.index === index);
      const entry = next.timeShards[at];
      if (entry) next.timeShards[at] = { ...entry, t_end: r.t, n: entry.n + 1 };
      else at = next.timeShards.push({ index, t_start: r.t, t_end: r.t, n: 1 }) - 1;
      changed.add(at);
    }
    noteChanges(state.timeShards, next.timeShards, changed);
    next.nCommitted += verified.records.length;
    next.lastT = verified.records[verified.records.length - 1]!.t;
  }
  next.staticsCommitted = [...new Set([...next.staticsCommitted, ...verified.statics])].sort();
  const blobKey = (b: { scope: string; record?: number; writer: number; key: string }) =>
    `${b.scope}/${b.record}/${b.writer}/${b.key}`;
  const blobs = new Map(next.blobs.map((b) => [blobKey(b), b]));
  for (const b of verified.blobs) blobs.set(blobKey(b), b);
  next.blobs = [...blobs.values()].sort(compareBlobs);
  next.commitSeq += 1;
  return next;
}

/** Seed §7 append resume: the first `keep` records stay committed; `times` are the committed t values. */
export function truncatedState(
  state: CommittedState,
  keep: number,
  times: Float64Array,
  shardT: number,
  bumpCommitSeq: boolean,
): CommittedState {
  const next = nextState(state);
  next.nCommitted = keep;
  next.timeShards = [];
  for (let start = 0; start < keep; start += shardT) {
    const end = Math.min(start + shardT, keep);
    next.timeShards.push({
      index: start / shardT,
      t_start: times[start]!,
      t_end: times[end - 1]!,
      n: end - start,
    });
  }
  next.lastT = keep > 0 ? times[keep - 1]! : null;
  next.blobs = next.blobs.filter((b) => b.scope !== "record" || b.record! < keep);
  if (bumpCommitSeq) next.commitSeq += 1;
  return next;
}

/** Seed §6.2 invalidate: the records, and their record-scope blobs, become uncommitted. */
export function invalidatedState(state: CommittedState, indices: number[]): CommittedState {
  const drop = new Set(indices);
  const next = nextState(state);
  const entries = state.entries!;
  next.entries = entries.with(new Map([...drop].map((i) => [i, { ...entries.at(i)!, committed: false }])));
  carrySummary(entries, next.entries, drop);
  next.blobs = next.blobs.filter((b) => !(b.scope === "record" && drop.has(b.record!)));
  next.commitSeq += 1;
  return next;
}

/**
 * A record blob names a record below the manifest's n_records once the commit lands (the committed count
 * in append mode, the time length in indexed mode): every reader refuses a manifest listing any other, so
 * the commit is refused before it writes.
 */
export function checkBlobRecords(next: CommittedState, blobs: ManifestBlob[]): void {
  for (const b of blobs) {
    if (b.scope !== "record") continue;
    const r = b.record!;
    const bound = next.entries ? next.entries.length : next.nCommitted;
    if (r >= bound) {
      throw new CommitError(
        `writer ${b.writer}'s blob ${JSON.stringify(b.key)} is for record ${r}, but the store would have ${bound} records`,
        "blobs",
        [b.writer],
      );
    }
  }
}

/** The committed record indices: the prefix in append mode, the committed entries in indexed mode. */
export function committedIndices(state: CommittedState): number[] {
  const { entries, nCommitted } = state;
  if (!entries) return Array.from({ length: nCommitted }, (_, i) => i);
  const out: number[] = [];
  for (let i = 0; i < entries.length; i++) if (entries.at(i)!.committed) out.push(i);
  return out;
}

export function committedCount(state: CommittedState): number {
  return state.entries ? committedEntries(state.entries) : state.nCommitted;
}

import {
  type BigIntStats,
  close,
  constants,
  linkSync,
  lstatSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  utimesSync,
} from "node:fs";
import { type ConfinedDir, refused } from "./fs-confine.js";
import { errorCode, fsError, isAbsent } from "./fs-errors.js";

/**
 * A file's version: every put renames a freshly written file into place, so the inode changes with every
 * write while the object exists; size and modification time guard against the inode being reused later
 * (ext4 hands a freed inode to the next file at once). putIfVersion keeps each key's modification times
 * strictly increasing (laterThan), so a stamp never comes back for a key while it exists.
 */
export function fileStamp(info: Pick<BigIntStats, "ino" | "size" | "mtimeNs">): string {
  return `f${info.ino}-${info.size}-${info.mtimeNs}`;
}

/**
 * The stats of `name` in `dir`, or undefined when absent or not a regular file; a symbolic link there is
 * refused, never followed. Without the thread pool: for the few syscalls made while holding a key's lock.
 */
export function statNow(
  dir: ConfinedDir,
  name: string,
  key: string,
  action: string,
): BigIntStats | undefined {
  let info: BigIntStats;
  try {
    info = lstatSync(dir.at(name), { bigint: true });
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw fsError(action, key, err);
  }
  if (info.isSymbolicLink()) throw refused(action, key);
  return info.isFile() ? info : undefined;
}

/**
 * Moves the staged file's modification time past `floor` (the version it replaces), returning its stats.
 * Timestamps come from a coarse clock: writes within one tick share a time, and with an inode reused they
 * would share a stamp, letting a writer holding an old version swap over a newer one.
 */
export function laterThan(temp: string, staged: BigIntStats, floor: bigint): BigIntStats {
  let info = staged;
  // utimes takes seconds as a double (about 0.24 µs apart today): step a microsecond at a time.
  for (let step = 1000n; info.mtimeNs <= floor; step *= 2n) {
    const seconds = Number(floor + step) / 1e9;
    utimesSync(temp, seconds, seconds);
    info = statSync(temp, { bigint: true });
  }
  return info;
}

/**
 * Create-only needs no lock: link refuses an existing name atomically, whoever else links or renames
 * there. It runs on this thread, not the pool, so it never waits behind codec jobs.
 */
export function linkUnlessPresent(temp: string, target: string, key: string): boolean {
  try {
    linkSync(temp, target);
  } catch (err) {
    if (errorCode(err) === "EEXIST") return false;
    throw fsError("putIfVersion", key, err);
  }
  try {
    unlinkSync(temp);
  } catch {
    // a staging name left behind is invisible to every key and list
  }
  return true;
}

/** Replaced objects at least this large are freed off this thread (see renameOver). */
const FREE_ELSEWHERE_MIN = 1n << 20n;

/**
 * renameSync(temp, target), where `current` is the target's stats (undefined when absent). Replacing a file
 * frees the old one's blocks and cached pages inside the rename, about 0.2 ms per MB on ext4, and this
 * rename runs on the JS thread under the key's lock, where a time shard rewritten at every commit would
 * spend up to 9 ms a commit. Holding the old file open across the rename moves that work to its close,
 * which runs on the thread pool.
 */
export function renameOver(temp: string, target: string, current: BigIntStats | undefined): void {
  let old: number | undefined;
  if (current !== undefined && current.size >= FREE_ELSEWHERE_MIN) {
    try {
      old = openSync(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      // Not openable (gone meanwhile, no permission): the rename frees it here instead.
    }
  }
  try {
    renameSync(temp, target);
  } finally {
    if (old !== undefined) close(old, () => {});
  }
}

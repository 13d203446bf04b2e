import { type BigIntStats, linkSync, statSync, unlinkSync } from "node:fs";
import { stat } from "node:fs/promises";
import { errorCode, fsError, isAbsent } from "./fs-errors.js";

/**
 * A file's version: every put renames a freshly written file into place, so the inode changes with every
 * write while the object exists; size and modification time guard against the inode being reused later.
 */
export function fileStamp(info: BigIntStats): string {
  return `f${info.ino}-${info.size}-${info.mtimeNs}`;
}

export async function currentStamp(path: string, key: string): Promise<string | undefined> {
  try {
    const info = await stat(path, { bigint: true });
    return info.isFile() ? fileStamp(info) : undefined;
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw fsError("version", key, err);
  }
}

/** currentStamp without the thread pool, for the few syscalls made while holding a key's lock. */
export function stampNow(path: string, key: string): string | undefined {
  try {
    const info = statSync(path, { bigint: true });
    return info.isFile() ? fileStamp(info) : undefined;
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw fsError("version", key, err);
  }
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

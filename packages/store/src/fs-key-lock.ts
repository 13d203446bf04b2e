import { randomBytes } from "node:crypto";
import {
  closeSync,
  fstatSync,
  linkSync,
  openSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { StoreError } from "@zarr-stream/spec";
import { fsError } from "./fs-errors.js";
import { TEMP_PREFIX } from "./keys.js";

export interface KeyLockOptions {
  /** A lock file older than this is taken to be left by a dead process and is broken (default 10 s). */
  staleMs?: number;
  /** Give up with a StoreError after waiting this long for a live holder (default 30 s). */
  timeoutMs?: number;
}

/**
 * Runs `critical` while holding an O_EXCL lock file beside the object (`.zs-tmp-lock-<name>`, a reserved
 * name no key can have and list never shows), so check-then-rename sequences of different processes on
 * one key do not interleave. Only cooperating callers are excluded: a plain put does not take the lock.
 *
 * Taking, checking and releasing the lock are a handful of metadata syscalls made synchronously: through
 * the thread pool each would queue behind the codec jobs that keep it busy while a writer streams, and a
 * shard write would wait for them many times over. Only waiting for another holder is asynchronous.
 *
 * Limits: a holder stalled longer than `staleMs` (SIGSTOP, a long GC pause, a hung NFS server) loses the
 * lock to a waiter and both may write; NFS before v3 has no reliable O_EXCL.
 */
export async function withKeyLock<T>(
  dir: string,
  name: string,
  key: string,
  critical: () => T,
  options: KeyLockOptions = {},
): Promise<T> {
  const staleMs = options.staleMs ?? 10_000;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const lockPath = join(dir, `${TEMP_PREFIX}lock-${name}`);
  const ino = await acquire(lockPath, key, staleMs, timeoutMs);
  try {
    return critical();
  } finally {
    // Remove only our own lock: if it was broken as stale, the file there now belongs to someone else.
    if (inodeOf(lockPath) === ino) quietly(() => unlinkSync(lockPath));
  }
}

async function acquire(lockPath: string, key: string, staleMs: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const ino = tryLock(lockPath, key);
    if (ino !== undefined) return ino;
    breakIfStale(lockPath, staleMs);
    if (Date.now() > deadline) {
      throw new StoreError(
        `FsStore: ${JSON.stringify(key)} stayed locked for ${timeoutMs} ms by ${lockPath}`,
        key,
      );
    }
    // Holds last a few milliseconds; back off a little more each time, with jitter so waiters spread.
    await sleep(Math.min(50, 1 + attempt) * (0.5 + Math.random()));
  }
}

/** The lock file's inode when we created it, undefined when someone else holds it. */
function tryLock(lockPath: string, key: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(lockPath, "wx");
  } catch (err) {
    if ((err as { code?: string }).code === "EEXIST") return undefined;
    throw new StoreError(`FsStore lock for ${JSON.stringify(key)} failed: ${String(err)}`, key, {
      cause: err,
    });
  }
  try {
    writeSync(fd, `${process.pid} ${new Date().toISOString()}\n`);
    return fstatSync(fd).ino;
  } catch (err) {
    // A full disk (ENOSPC, EDQUOT) fails the write after the file exists: a lock left behind would make
    // the next put of this key wait out staleMs once space is back.
    quietly(() => unlinkSync(lockPath));
    throw fsError("lock", key, err);
  } finally {
    closeSync(fd);
  }
}

function inodeOf(path: string): number | undefined {
  try {
    return statSync(path).ino;
  } catch {
    return undefined;
  }
}

function quietly(action: () => void): void {
  try {
    action();
  } catch {
    // already gone, or someone else's now
  }
}

/** Moves a stale lock aside (rename is atomic, so two breakers cannot both remove a fresh lock by name). */
function breakIfStale(lockPath: string, staleMs: number): void {
  let info: { ino: number; mtimeMs: number };
  try {
    info = statSync(lockPath);
  } catch {
    return;
  }
  if (Date.now() - info.mtimeMs <= staleMs) return;
  const aside = `${lockPath}-stale-${randomBytes(6).toString("hex")}`;
  try {
    renameSync(lockPath, aside);
  } catch {
    return; // someone else broke or released it first
  }
  // Between our stat and rename another waiter may have broken the stale lock and a third taken a fresh
  // one: put a fresh lock back (link fails, harmlessly, if yet another lock appeared meanwhile).
  if (inodeOf(aside) !== info.ino) quietly(() => linkSync(aside, lockPath));
  quietly(() => unlinkSync(aside));
}

import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, lstat, open, rename, unlink } from "node:fs/promises";
import type { DirectWrites } from "./direct-writes.js";
import { ConfinedDir } from "./fs-confine.js";
import { fsError, isAbsent } from "./fs-errors.js";
import { TEMP_PREFIX } from "./keys.js";

/*
 * How FsStore writes an object so that no reader and no process that outlives a crash sees a part: the
 * bytes go into a staging file in the target's own directory (so the rename never crosses a filesystem)
 * and are fsynced before the file is renamed or linked into place; new directories are fsynced after.
 * Every path here is a name in a ConfinedDir, so no symbolic link below the root is followed.
 *
 * Keys under a prefix set apart (FsStore.stageApart) stage in one directory of that prefix instead,
 * `<prefix>.zs-tmp-staging/`: a peer program that lists the key's directory and reads every name in it
 * (firecube's claims/) must never meet a staging or lock file that a killed process left there.
 */

/** The directory, below an apart prefix, that holds the staging and lock files of its keys. */
export const STAGING_DIR = `${TEMP_PREFIX}staging`;

/**
 * The directory a key's staging and lock files go to, and the name its lock file is made from: the key's
 * own directory and name, or, for a key under one of the `apart` prefixes, that prefix's staging
 * directory (closed with `dir`) and a digest of the whole key, since keys of many directories share it.
 * The staging directory is on the key's filesystem, so its files still rename and link into place.
 */
export function stagingPlace(
  root: string,
  key: string,
  dir: ConfinedDir,
  name: string,
  apart: readonly string[],
): { place: ConfinedDir; lockName: string } {
  const prefix = apart.find((p) => key.startsWith(p));
  if (prefix === undefined) return { place: dir, lockName: name };
  const place = ConfinedDir.open(root, `${prefix}${STAGING_DIR}/-`, true, "stage")!;
  dir.closeWith(place);
  return { place, lockName: createHash("sha256").update(key).digest("hex").slice(0, 32) };
}

/** A fresh staging file's path in `dir`: named by this process and 64 random bits, never a key. */
function stagingFile(dir: ConfinedDir): string {
  return dir.at(`${TEMP_PREFIX}${process.pid}-${randomBytes(8).toString("hex")}`);
}

export async function stage(
  dir: ConfinedDir,
  bytes: Uint8Array,
  key: string,
  direct: DirectWrites,
): Promise<string> {
  const temp = stagingFile(dir);
  let file: FileHandle | undefined;
  try {
    if (await direct.write(temp, bytes, dir.beneath)) return temp;
    file = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW);
    await file.writeFile(bytes);
    await file.sync();
    await file.close();
    return temp;
  } catch (err) {
    await file?.close().catch(() => undefined);
    await unlinkQuietly(temp);
    throw fsError("stage", key, err);
  }
}

/**
 * As stage, from a stream: each chunk is written before the next is asked for. An error of the source
 * itself is rethrown as it is (the staging file removed), so the caller sees why its data failed.
 */
export async function stageFrom(
  dir: ConfinedDir,
  chunks: AsyncIterable<Uint8Array>,
  key: string,
): Promise<string> {
  const temp = stagingFile(dir);
  let file: FileHandle | undefined;
  let sourceFailed = false;
  try {
    file = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW);
    const iterator = chunks[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await iterator.next();
      } catch (err) {
        sourceFailed = true;
        throw err;
      }
      if (next.done) break;
      const chunk = next.value;
      for (let done = 0; done < chunk.length; ) {
        done += (await file.write(chunk, done, chunk.length - done)).bytesWritten;
      }
    }
    await file.sync();
    await file.close();
    return temp;
  } catch (err) {
    await file?.close().catch(() => undefined);
    await unlinkQuietly(temp);
    throw sourceFailed ? err : fsError("stage", key, err);
  }
}

export async function replace(
  dir: ConfinedDir,
  target: string,
  bytes: Uint8Array,
  key: string,
  direct: DirectWrites,
): Promise<void> {
  const temp = await stage(dir, bytes, key, direct);
  try {
    await rename(temp, target);
  } catch (err) {
    await unlinkQuietly(temp);
    throw fsError("put", key, err);
  }
}

export async function exists(path: string, key: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if (isAbsent(err)) return false;
    throw fsError("putIfAbsent", key, err);
  }
}

export async function unlinkQuietly(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

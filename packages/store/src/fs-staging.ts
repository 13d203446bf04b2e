import { randomBytes } from "node:crypto";
import { type FileHandle, lstat, mkdir, open, rename, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { DirectWrites } from "./direct-writes.js";
import { fsError, isAbsent } from "./fs-errors.js";
import { TEMP_PREFIX } from "./keys.js";

/*
 * How FsStore writes an object so that no reader and no process that outlives a crash sees a part: the
 * bytes go into a staging file in the target's own directory (so the rename never crosses a filesystem)
 * and are fsynced before the file is renamed or linked into place; new directories are fsynced after.
 */

export async function stage(
  dir: string,
  bytes: Uint8Array,
  key: string,
  direct: DirectWrites,
): Promise<string> {
  const temp = join(dir, `${TEMP_PREFIX}${process.pid}-${randomBytes(8).toString("hex")}`);
  let file: FileHandle | undefined;
  try {
    if (await direct.write(temp, bytes)) return temp;
    file = await open(temp, "wx");
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

export async function replace(
  dir: string,
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

/** Creates `dir` and returns the directories whose entries changed (new dirs and their parent, else just dir). */
export async function makeDirs(dir: string, key: string): Promise<string[]> {
  let first: string | undefined;
  try {
    first = await mkdir(dir, { recursive: true });
  } catch (err) {
    throw fsError("create directory for", key, err);
  }
  if (first === undefined) return [dir];
  const dirs = [dirname(first)];
  for (let d = dir; d !== dirname(first); d = dirname(d)) dirs.push(d);
  return dirs;
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

/** Best effort: some filesystems and platforms refuse fsync on a directory, and that must not fail a write. */
export async function syncDirs(dirs: string[]): Promise<void> {
  await Promise.all(
    dirs.map(async (dir) => {
      const handle = await open(dir, "r").catch(() => undefined);
      if (handle === undefined) return;
      await handle.sync().catch(() => undefined);
      await handle.close().catch(() => undefined);
    }),
  );
}

export async function unlinkQuietly(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

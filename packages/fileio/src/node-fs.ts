import { constants, existsSync } from "node:fs";
import { type FileHandle, lstat, open, readlink, realpath } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import type { DirectFileWriter, FileRangeReader, PinnedFile } from "./file-io.js";

const { O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_WRONLY } = constants;
/**
 * Where the kernel names each open descriptor's file (Linux), else undefined. A path
 * `/proc/self/fd/N/name` looks `name` up in the directory N is open on, wherever that directory is now
 * and whatever lies at its old path: openat for node:fs, which has none.
 */
export const FD_PATHS = existsSync("/proc/self/fd") ? "/proc/self/fd" : undefined;

/** An Error shaped as node:fs's, code ELOOP: a symbolic link (or a moved directory) below the root. */
function loopError(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ELOOP: a symbolic link below the root, open '${path}'`), {
    code: "ELOOP",
    errno: -osConstants.errno.ELOOP,
    syscall: "open",
    path,
  });
}

/**
 * open(path, flags | O_NOFOLLOW) confined as the addon's zs_open_beneath is (see file-io.ts), without
 * openat: the descriptor is opened first, then where it landed is checked before it is used, so a swap
 * of a directory for a link between the two cannot leak a byte. On Linux the kernel's name for the
 * descriptor (/proc/self/fd/N) must be the root's real path plus the rest of `path`; elsewhere each
 * component is lstat'ed (none a link) and the last must be the opened inode, which a swap timed between
 * those lstats can still fool: only /proc makes this exact. A file renamed over meanwhile reads as the
 * version opened, as an unconfined open would. Rejects with code ELOOP when the check fails.
 */
export async function openBeneath(path: string, beneath: number, flags: number, mode = 0o666) {
  if (beneath === 0) return open(path, flags, mode);
  if (path[beneath] !== "/" || beneath >= path.length - 1)
    throw Object.assign(new Error(`EINVAL: ${beneath} is not a directory prefix of '${path}'`), {
      code: "EINVAL",
    });
  const file = await open(path, flags | O_NOFOLLOW, mode).catch(async (err: NodeJS.ErrnoException) => {
    // Absent through a link is still through a link (it would tell what lies outside), and O_DIRECTORY
    // with O_NOFOLLOW reports a link as ENOTDIR: the answer is ELOOP when a component is a link.
    if ((err.code === "ENOENT" || err.code === "ENOTDIR") && (await linkOnPath(path, beneath)))
      throw loopError(path);
    throw err;
  });
  try {
    if (!(await landedAt(file, path, beneath))) throw loopError(path);
    return file;
  } catch (err) {
    await file.close();
    throw err;
  }
}

/** Whether a component of path after its first `beneath` bytes is a symbolic link (a missing one ends it). */
async function linkOnPath(path: string, beneath: number): Promise<boolean> {
  let at = path.slice(0, beneath);
  for (const part of path.slice(beneath + 1).split("/")) {
    at = `${at}/${part}`;
    const info = await lstat(at).catch(() => undefined);
    if (info === undefined || info.isSymbolicLink()) return info !== undefined;
  }
  return false;
}

const realRoots = new Map<string, Promise<string>>();

async function landedAt(file: FileHandle, path: string, beneath: number): Promise<boolean> {
  const prefix = path.slice(0, beneath);
  if (FD_PATHS !== undefined) {
    let real = realRoots.get(prefix);
    if (real === undefined) {
      real = realpath(prefix);
      realRoots.set(prefix, real);
      real.catch(() => realRoots.delete(prefix));
    }
    const named = await readlink(`${FD_PATHS}/${file.fd}`);
    const want = (await real) + path.slice(beneath);
    return named === want || named === `${want} (deleted)`;
  }
  const parts = path.slice(beneath + 1).split("/");
  let at = prefix;
  for (const part of parts.slice(0, -1)) {
    at = `${at}/${part}`;
    if (!(await lstat(at)).isDirectory()) return false;
  }
  const [opened, named] = await Promise.all([file.stat(), lstat(`${at}/${parts.at(-1)}`)]);
  return opened.dev === named.dev && opened.ino === named.ino;
}

/** The same contract as the addon's writer through node:fs: exclusive create, write, fsync (buffered). */
export const nodeFsWriter: DirectFileWriter = async (path, bytes, beneath = 0) => {
  const file = await createBeneath(path, beneath);
  try {
    await file.writeFile(bytes);
    await file.sync();
  } finally {
    await file.close();
  }
};

/**
 * Creates `path` exclusively, confined as openBeneath is. Checking a file after creating it would be too
 * late (it would already exist wherever a link led), so its directory is opened and checked first and
 * the file created in that directory through /proc/self/fd/N: exact on Linux, a check before the use
 * elsewhere.
 */
async function createBeneath(path: string, beneath: number): Promise<FileHandle> {
  const flags = O_WRONLY | O_CREAT | O_EXCL;
  const cut = path.lastIndexOf("/");
  if (beneath === 0 || cut === beneath) return open(path, flags, 0o666);
  const dir = await openBeneath(path.slice(0, cut), beneath, O_RDONLY | constants.O_DIRECTORY);
  try {
    const at = FD_PATHS === undefined ? path : `${FD_PATHS}/${dir.fd}${path.slice(cut)}`;
    return await open(at, flags | O_NOFOLLOW, 0o666);
  } finally {
    await dir.close();
  }
}

/** The same contract as the addon's range reader through node:fs (open, fstat, read, close). */
export const nodeFsRangeReader: FileRangeReader = async (path, position, length, fromEnd, into, beneath) => {
  const file = await openBeneath(path, beneath ?? 0, O_RDONLY | O_NONBLOCK);
  try {
    return await readHandle(file, position, length, fromEnd, into);
  } finally {
    await file.close();
  }
};

/** A PinnedFile through a node:fs FileHandle: open once, then fstat and read per read. */
export function nodeFsPinnedFile(path: string, beneath = 0): PinnedFile {
  let opened: Promise<FileHandle | undefined> | undefined;
  return {
    async read(position, length, fromEnd, into) {
      const kept = opened === undefined ? undefined : await opened;
      if (kept !== undefined) return readHandle(kept, position, length, fromEnd, into);
      const first = openBeneath(path, beneath, O_RDONLY | O_NONBLOCK);
      opened = first.catch(() => undefined);
      const file = await first;
      const got = await readHandle(file, position, length, fromEnd, into).catch(async (err: unknown) => {
        opened = undefined;
        await file.close();
        throw err;
      });
      if (got[1] < 0) {
        opened = undefined;
        await file.close();
      }
      return got;
    },
    async close() {
      const file = await opened;
      opened = undefined;
      await file?.close();
    },
  };
}

/** One FileRangeReader read through an open file. */
async function readHandle(
  file: FileHandle,
  position: number,
  length: number,
  fromEnd: boolean,
  into: Uint8Array,
): Promise<[number, number]> {
  const st = await file.stat();
  if (!st.isFile()) return [0, -1];
  const start = fromEnd ? Math.max(0, st.size - length) : Math.min(position, st.size);
  const want = fromEnd ? st.size - start : Math.min(length, st.size - start);
  if (want > into.length) return [-1, st.size];
  let done = 0;
  while (done < want) {
    const { bytesRead } = await file.read(into, done, want - done, start + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return [done, st.size];
}

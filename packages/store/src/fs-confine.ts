import { closeSync, constants, fsync, lstatSync, mkdirSync, openSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { FD_PATHS } from "@zarr-stream/fileio";
import { SymlinkRefused } from "@zarr-stream/spec";
import { errorCode, fsError, isAbsent } from "./fs-errors.js";

const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY } = constants;
export const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
const fsyncAsync = promisify(fsync);

/**
 * A directory below an FsStore root, opened from the root one component at a time with O_NOFOLLOW: no
 * symbolic link below the root is followed, and one found is refused (SymlinkRefused). Names in it are
 * used through `at(name)`, which on Linux goes through the open descriptor, so a directory swapped for a
 * link after the walk is not followed either; elsewhere `at` is the plain path and the walk is a check
 * made before the use. The walk's descriptors stay open until `close`.
 */
export class ConfinedDir {
  /** This directory as a path prefix for `at`, and the length of it a confined open may trust. */
  readonly path: string;
  readonly beneath: number;
  /** Descriptors kept for sync: the key's directory and every directory whose entries the walk changed. */
  readonly #kept: number[];
  /** The parent of the first directory made above the root's own (a root created by this walk), if any. */
  readonly #above: string | undefined;
  /** Directories used with this one (a staging directory), closed when it is. */
  readonly #companions: ConfinedDir[] = [];

  private constructor(path: string, beneath: number, kept: number[], above: string | undefined) {
    this.path = path;
    this.beneath = beneath;
    this.#kept = kept;
    this.#above = above;
  }

  /**
   * The directory of `key` (its segments before the last) below `root`; absent (undefined) when a
   * segment is missing or not a directory, unless `create`, which makes the missing ones. A directory on
   * the way is closed as soon as the next is open, unless the walk changed its entries: a writer with
   * hundreds of puts in flight holds one or two descriptors per put, not one per level.
   */
  static open(root: string, key: string, create: boolean, action: string): ConfinedDir | undefined {
    const segments = key.split("/").slice(0, -1);
    const kept: number[] = [];
    let fd: number | undefined;
    let above: string | undefined;
    try {
      fd = openDir(root, root, key, action);
      if (fd === undefined && create) {
        const first = mkdirQuietly(root, root, key, action);
        if (first !== undefined) above = dirname(first);
        fd = openDir(root, root, key, action);
      }
      if (fd === undefined) return undefined;
      let changed = above !== undefined;
      let path = root;
      for (const segment of segments) {
        const base = FD_PATHS === undefined ? path : `${FD_PATHS}/${fd}`;
        let next = openDir(join(base, segment), root, key, action);
        const made = next === undefined && create;
        if (made) {
          mkdirQuietly(join(base, segment), root, key, action);
          changed = true;
          next = openDir(join(base, segment), root, key, action);
        }
        if (next === undefined) {
          // A file where a directory must be: no write can make the key's directory.
          if (create) {
            const cause = Object.assign(new Error(`ENOTDIR: ${segment} is not a directory`), {
              code: "ENOTDIR",
            });
            throw fsError(`create directory for ${action}`, key, cause);
          }
          return undefined;
        }
        if (changed) kept.push(fd);
        else closeSync(fd);
        fd = next;
        changed = made;
        path = join(path, segment);
      }
      kept.push(fd);
      fd = undefined;
      const at = FD_PATHS === undefined ? path : `${FD_PATHS}/${kept.at(-1)}`;
      return new ConfinedDir(at, FD_PATHS === undefined ? root.length : at.length, kept, above);
    } catch (err) {
      if (fd !== undefined) kept.push(fd);
      fd = undefined;
      closeAll(kept);
      throw err;
    } finally {
      if (fd !== undefined) closeAll([...kept, fd]);
    }
  }

  at(name: string): string {
    return `${this.path}/${name}`;
  }

  /**
   * Refuses when `name` here is a symbolic link: a write or delete would replace or remove the link,
   * not what it names, but the store treats a link on a key's path as foreign all the same.
   */
  refuseLink(name: string, key: string, action: string): void {
    let link = false;
    try {
      link = lstatSync(this.at(name)).isSymbolicLink();
    } catch (err) {
      if (!isAbsent(err)) throw fsError(action, key, err);
    }
    if (link) throw refused(action, key);
  }

  /**
   * fsyncs the directories whose entries changed: the object's own (a rename or link into it) and the
   * parents of new ones. Best effort: some filesystems refuse fsync on a directory, and that must not
   * fail a write.
   */
  async sync(): Promise<void> {
    const above = this.#above === undefined ? [] : [syncPath(this.#above)];
    await Promise.all([...this.#kept.map((fd) => fsyncAsync(fd).catch(() => undefined)), ...above]);
  }

  /** Closes `other` when this directory is closed. */
  closeWith(other: ConfinedDir): void {
    this.#companions.push(other);
  }

  close(): void {
    closeAll(this.#kept);
    this.#kept.length = 0;
    for (const other of this.#companions.splice(0)) other.close();
  }
}

/** `use` on the key's directory (absent: undefined, or `create` it), closed after. */
export async function inDir<T>(
  root: string,
  key: string,
  create: boolean,
  action: string,
  use: (dir: ConfinedDir, name: string) => Promise<T> | T,
): Promise<T | undefined> {
  const dir = ConfinedDir.open(root, key, create, action);
  if (dir === undefined) return undefined;
  try {
    return await use(dir, key.slice(key.lastIndexOf("/") + 1));
  } finally {
    dir.close();
  }
}

export function refused(action: string, key: string, cause?: unknown): SymlinkRefused {
  return new SymlinkRefused(
    `FsStore ${action} ${JSON.stringify(key)} refused: a symbolic link inside the store root on the key's path (FsStore follows none)`,
    key,
    { cause },
  );
}

/**
 * Opens the directory at `path` without following a link there; undefined when absent or not a
 * directory. O_DIRECTORY with O_NOFOLLOW reports a link as ENOTDIR, so an lstat tells them apart: a link
 * there, or a directory (a link there a moment ago, swapped since), is refused.
 */
function openDir(path: string, root: string, key: string, action: string): number | undefined {
  try {
    // The root itself may be reached through links (e.g. /tmp on macOS): only what lies below is confined.
    return openSync(path, path === root ? O_RDONLY | O_DIRECTORY : DIR_FLAGS);
  } catch (err) {
    const code = errorCode(err);
    if (code === "ELOOP") throw refused(action, key, err);
    if (code === "ENOTDIR" && linkOrDirectory(path)) throw refused(action, key, err);
    if (isAbsent(err)) return undefined;
    throw fsError(action, key, err);
  }
}

function linkOrDirectory(path: string): boolean {
  try {
    const info = lstatSync(path);
    return info.isSymbolicLink() || info.isDirectory();
  } catch {
    return false;
  }
}

/** Makes `path` (the root: with its missing parents); the first directory made, when the root was. */
function mkdirQuietly(path: string, root: string, key: string, action: string): string | undefined {
  try {
    return mkdirSync(path, path === root ? { recursive: true } : undefined) ?? undefined;
  } catch (err) {
    // Another writer made it first; what it is, the open after decides.
    if (errorCode(err) !== "EEXIST") throw fsError(`create directory for ${action}`, key, err);
    return undefined;
  }
}

/** fsync of a directory above the root, by path (the root's ancestors are trusted); best effort. */
async function syncPath(path: string): Promise<void> {
  const handle = await open(path, "r").catch(() => undefined);
  await handle?.sync().catch(() => undefined);
  await handle?.close().catch(() => undefined);
}

function closeAll(fds: number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
    } catch {
      // a directory descriptor has nothing to flush
    }
  }
}

import { randomBytes } from "node:crypto";
import { type BigIntStats, linkSync, renameSync, statSync, unlinkSync } from "node:fs";
import { type FileHandle, link, lstat, mkdir, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type FileRangeReader, fileRangeReader } from "@zarr-stream/fileio";
import { SchemaError, StoreError } from "@zarr-stream/spec";
import { DirectWrites, nativeFilesEnabled } from "./direct-writes.js";
import { withKeyLock } from "./fs-key-lock.js";
import {
  assertByteCount,
  assertBytes,
  assertExpectedVersion,
  assertValidKey,
  assertValidPrefix,
  TEMP_PREFIX,
} from "./keys.js";
import type { Store } from "./store.js";

const ABSENT = Symbol("absent");
/** Reads up to this long allocate their result before the object's size is known (one job, not two). */
const FRESH_READ_MAX = 1 << 20;
/** get() reads this much in its first job; most objects read whole (zarr.json, tokens, manifests). */
const GET_GUESS_BYTES = 16 << 10;

/**
 * A Store on a local directory. Writes stage into a temp file in the target's own directory (so the
 * rename never crosses a filesystem), fsync it, then rename (put) or hard-link (putIfAbsent) it into place:
 * a reader, or a process that survives our crash, sees the old object or the new one, never a part.
 *
 * Keys are confined lexically (no "..", ".", empty or absolute segments). Symbolic links placed inside the
 * root by someone else are followed by the OS on get/put but never walked by list; the store does not try
 * to defend the root against a party that can already write into it.
 */
export class FsStore implements Store {
  readonly url: string;
  /** Absolute path of the store root; created by the first write. */
  readonly root: string;
  readonly #direct = DirectWrites.fromEnvironment();
  /** One job per read (open, fstat, pread, close, on the addon's I/O threads) instead of four node:fs calls. */
  readonly #reader: FileRangeReader | undefined = nativeFilesEnabled() ? fileRangeReader() : undefined;

  constructor(rootDir: string) {
    if (typeof rootDir !== "string" || rootDir === "" || rootDir.includes("\0")) {
      throw new StoreError(
        `FsStore root must be a non-empty path without NUL, got ${JSON.stringify(rootDir)}`,
      );
    }
    this.root = resolve(rootDir);
    this.url = pathToFileURL(this.root).href;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    assertValidKey(key);
    if (this.#reader !== undefined) {
      // Metadata documents are small: one job reads them whole, a larger object a second time.
      const got = await this.#readFresh(key, 0, GET_GUESS_BYTES, false);
      if (got === ABSENT) return undefined;
      if (got.size <= GET_GUESS_BYTES) return got.bytes;
    }
    return this.#read(key, (file, size) => readFully(file, 0, size));
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | undefined> {
    assertValidKey(key);
    assertByteCount("offset", offset, key);
    assertByteCount("length", length, key);
    if (this.#reader !== undefined && length <= FRESH_READ_MAX) {
      const got = await this.#readFresh(key, offset, length, false);
      return got === ABSENT ? undefined : got.bytes;
    }
    return this.#read(key, (file, size) => {
      const start = Math.min(offset, size);
      return readFully(file, start, Math.min(length, size - start));
    });
  }

  async getSuffix(key: string, n: number): Promise<Uint8Array | undefined> {
    assertValidKey(key);
    assertByteCount("suffix length", n, key);
    if (this.#reader !== undefined && n <= FRESH_READ_MAX) {
      const got = await this.#readFresh(key, 0, n, true);
      return got === ABSENT ? undefined : got.bytes;
    }
    return this.#read(key, (file, size) => {
      const start = Math.max(0, size - n);
      return readFully(file, start, size - start);
    });
  }

  async getSuffixInto(key: string, n: number, into: Uint8Array): Promise<number | undefined> {
    assertValidKey(key);
    assertByteCount("suffix length", n, key);
    if (!(into instanceof Uint8Array))
      throw new SchemaError("getSuffixInto: into must be a Uint8Array", "/into");
    if (this.#reader !== undefined) {
      const got = await this.#readNative(key, 0, n, true, into);
      if (got === ABSENT) return undefined;
      if (got.read < 0)
        throw new SchemaError(
          `getSuffixInto: ${key} needs ${Math.min(n, got.size)} bytes, into holds ${into.length}`,
          "/into",
        );
      return got.read;
    }
    return this.#read(key, async (file, size) => {
      const start = Math.max(0, size - n);
      if (into.length < size - start)
        throw new SchemaError(
          `getSuffixInto: ${key} needs ${size - start} bytes, into holds ${into.length}`,
          "/into",
        );
      return (await readFully(file, start, size - start, into)).length;
    });
  }

  async size(key: string): Promise<number | undefined> {
    assertValidKey(key);
    try {
      const info = await stat(this.#path(key));
      return info.isFile() ? info.size : undefined;
    } catch (err) {
      if (isAbsent(err)) return undefined;
      throw fsError("size", key, err);
    }
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    assertValidKey(key);
    assertBytes(bytes, key);
    const target = this.#path(key);
    const dir = dirname(target);
    const newDirs = await this.#makeDir(dir, key);
    await replace(dir, target, bytes, key, this.#direct);
    await syncDirs(newDirs);
  }

  /**
   * The object and its version, read through one open file: a rename that replaces the object meanwhile
   * does not mix the two.
   */
  async getVersioned(key: string): Promise<{ bytes: Uint8Array; version: string } | undefined> {
    assertValidKey(key);
    return this.#read(key, async (file, size, info) => ({
      bytes: await readFully(file, 0, size),
      version: fileStamp(info),
    }));
  }

  async version(key: string): Promise<string | undefined> {
    assertValidKey(key);
    return currentStamp(this.#path(key), key);
  }

  /**
   * Compare-and-swap on the file's stamp (inode, size, modification time), exclusive across processes
   * through a lock file beside the object (see withKeyLock for its limits). The bytes are staged and
   * synced before the lock is taken, so the lock is held for a stat and a rename only. Every writer of the
   * key must use putIfVersion, not put. A crash while holding the lock leaves the object old or new, never
   * a part, plus a lock file that the next writer breaks once it is stale.
   */
  async putIfVersion(key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined> {
    assertValidKey(key);
    assertBytes(bytes, key);
    assertExpectedVersion(expected, key);
    const target = this.#path(key);
    const dir = dirname(target);
    const newDirs = await this.#makeDir(dir, key);
    const temp = await stage(dir, bytes, key, this.#direct);
    let swapped = false;
    try {
      // rename and link keep the inode, size and mtime: the staged file's stamp is the new version.
      const staged = fileStamp(statSync(temp, { bigint: true }));
      swapped =
        expected === null
          ? linkUnlessPresent(temp, target, key)
          : await withKeyLock(dir, basename(target), key, () => {
              if ((stampNow(target, key) ?? null) !== expected) return false;
              renameSync(temp, target);
              return true;
            });
      if (!swapped) return undefined;
      await syncDirs(newDirs);
      return staged;
    } catch (err) {
      throw fsError("putIfVersion", key, err);
    } finally {
      if (!swapped) await unlinkQuietly(temp);
    }
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    assertValidKey(key);
    assertBytes(bytes, key);
    const target = this.#path(key);
    // Cheap early answer for the common "already claimed" case; the link below is what decides.
    if (await exists(target, key)) return false;
    const dir = dirname(target);
    const newDirs = await this.#makeDir(dir, key);
    const temp = await stage(dir, bytes, key, this.#direct);
    let created = true;
    try {
      await link(temp, target);
    } catch (err) {
      if (errorCode(err) !== "EEXIST") throw fsError("putIfAbsent", key, err);
      created = false;
    } finally {
      await unlinkQuietly(temp);
    }
    if (created) await syncDirs(newDirs);
    return created;
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    const path = this.#path(key);
    try {
      await unlink(path);
    } catch (err) {
      if (isAbsent(err) || errorCode(err) === "EISDIR") return;
      // macOS reports unlink(directory) as EPERM; a directory is not an object, so it is absent.
      if (errorCode(err) === "EPERM" && (await lstat(path).catch(() => undefined))?.isDirectory()) return;
      throw fsError("delete", key, err);
    }
  }

  async list(prefix: string): Promise<string[]> {
    assertValidPrefix(prefix);
    const cut = prefix.lastIndexOf("/") + 1;
    const dirKey = prefix.slice(0, cut);
    if (!(await this.#isRealDir(dirKey, prefix))) return [];
    const keys: string[] = [];
    await walk(join(this.root, dirKey), dirKey, prefix.slice(cut), keys, prefix);
    return keys.sort();
  }

  /** True when every segment of dirKey ("a/b/") is a real directory, so list walks no symlink to reach it. */
  async #isRealDir(dirKey: string, prefix: string): Promise<boolean> {
    let path = this.root;
    for (const segment of dirKey.split("/").slice(0, -1)) {
      path = join(path, segment);
      try {
        if (!(await lstat(path)).isDirectory()) return false;
      } catch (err) {
        if (isAbsent(err)) return false;
        throw fsError("list", prefix, err);
      }
    }
    return true;
  }

  #path(key: string): string {
    return join(this.root, key);
  }

  /** One native read job; a missing path or anything but a regular file at the key reads as absent. */
  async #readNative(
    key: string,
    position: number,
    length: number,
    fromEnd: boolean,
    into: Uint8Array,
  ): Promise<{ read: number; size: number } | typeof ABSENT> {
    let read: number;
    let size: number;
    try {
      [read, size] = await this.#reader!(this.#path(key), position, length, fromEnd, into);
    } catch (err) {
      if (isAbsent(err) || errorCode(err) === "EISDIR") return ABSENT;
      throw fsError("read", key, err);
    }
    return size < 0 ? ABSENT : { read, size };
  }

  /** A native read into a fresh buffer of `length` bytes (not zero-filled: the read overwrites it). */
  async #readFresh(
    key: string,
    position: number,
    length: number,
    fromEnd: boolean,
  ): Promise<{ bytes: Uint8Array; size: number } | typeof ABSENT> {
    const buffer = new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
    const got = await this.#readNative(key, position, length, fromEnd, buffer);
    if (got === ABSENT) return ABSENT;
    // A short read hands out a copy, so the buffer's unread tail is never reachable.
    return { bytes: got.read < length ? buffer.slice(0, got.read) : buffer, size: got.size };
  }

  /** Opens the key for reading; a missing path or a directory at the key reads as absent. */
  async #read<T>(
    key: string,
    use: (file: FileHandle, size: number, info: BigIntStats) => Promise<T>,
  ): Promise<T | undefined> {
    let file: FileHandle;
    try {
      file = await open(this.#path(key), "r");
    } catch (err) {
      if (isAbsent(err) || errorCode(err) === "EISDIR") return undefined;
      throw fsError("read", key, err);
    }
    try {
      const info = await file.stat({ bigint: true });
      if (!info.isFile()) return undefined;
      return await use(file, Number(info.size), info);
    } catch (err) {
      throw fsError("read", key, err);
    } finally {
      await file.close();
    }
  }

  /** Returns the directories whose entries changed (new dirs and their parent, else just dir). */
  async #makeDir(dir: string, key: string): Promise<string[]> {
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
}

async function replace(
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

/**
 * A file's version: every put renames a freshly written file into place, so the inode changes with every
 * write while the object exists; size and modification time guard against the inode being reused later.
 */
function fileStamp(info: BigIntStats): string {
  return `f${info.ino}-${info.size}-${info.mtimeNs}`;
}

async function currentStamp(path: string, key: string): Promise<string | undefined> {
  try {
    const info = await stat(path, { bigint: true });
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
function linkUnlessPresent(temp: string, target: string, key: string): boolean {
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

/** currentStamp without the thread pool, for the few syscalls made while holding a key's lock. */
function stampNow(path: string, key: string): string | undefined {
  try {
    const info = statSync(path, { bigint: true });
    return info.isFile() ? fileStamp(info) : undefined;
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw fsError("version", key, err);
  }
}

async function stage(dir: string, bytes: Uint8Array, key: string, direct: DirectWrites): Promise<string> {
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

/** Reads `length` bytes at `position` into `into` (the caller's buffer, first bytes) or a new buffer. */
async function readFully(
  file: FileHandle,
  position: number,
  length: number,
  into?: Uint8Array,
): Promise<Uint8Array> {
  // Not zero-filled first: the read overwrites every byte we hand out, and clearing megabytes per shard
  // read was a tenth of a reader's JS time (issue #10). A short read of a fresh buffer returns a copy, so
  // the uninitialised tail is never reachable through the result's buffer.
  const out = into ?? new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await file.read(out, done, length - done, position + done);
    if (bytesRead === 0) return into ? out.subarray(0, done) : out.slice(0, done);
    done += bytesRead;
  }
  return out.subarray(0, length);
}

async function walk(dir: string, keyPrefix: string, fragment: string, out: string[], prefix: string) {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isAbsent(err)) return;
    throw fsError("list", prefix, err);
  }
  const below: Promise<void>[] = [];
  for (const entry of entries) {
    const name = entry.name;
    // Names no key could have (staging files, backslashes) are not objects of this store.
    if (name.startsWith(TEMP_PREFIX) || name.includes("\\") || !name.startsWith(fragment)) continue;
    if (entry.isDirectory()) below.push(walk(join(dir, name), `${keyPrefix}${name}/`, "", out, prefix));
    else if (entry.isFile()) out.push(keyPrefix + name);
  }
  await Promise.all(below);
}

async function exists(path: string, key: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if (isAbsent(err)) return false;
    throw fsError("putIfAbsent", key, err);
  }
}

/** Best effort: some filesystems and platforms refuse fsync on a directory, and that must not fail a write. */
async function syncDirs(dirs: string[]): Promise<void> {
  await Promise.all(
    dirs.map(async (dir) => {
      const handle = await open(dir, "r").catch(() => undefined);
      if (handle === undefined) return;
      await handle.sync().catch(() => undefined);
      await handle.close().catch(() => undefined);
    }),
  );
}

async function unlinkQuietly(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

function errorCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "code" in err ? String(err.code) : undefined;
}

function isAbsent(err: unknown): boolean {
  const code = errorCode(err);
  return code === "ENOENT" || code === "ENOTDIR";
}

function fsError(action: string, key: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const code = errorCode(cause) ?? (cause instanceof Error ? cause.message : String(cause));
  return new StoreError(`FsStore ${action} ${JSON.stringify(key)} failed: ${code}`, key, { cause });
}

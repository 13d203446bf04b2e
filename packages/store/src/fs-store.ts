import { type BigIntStats, constants, lstatSync, statSync } from "node:fs";
import { type FileHandle, link, rename, unlink } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  type FileRangeReader,
  type FileStatter,
  fileRangeReader,
  fileStatter,
  openBeneath,
  type PinnedFile,
  pinnedFileReader,
} from "@zarr-stream/fileio";
import { SchemaError, StoreError } from "@zarr-stream/spec";
import * as check from "./arguments.js";
import { DirectWrites, nativeFilesEnabled } from "./direct-writes.js";
import { inDir, refused } from "./fs-confine.js";
import { errorCode, fsError, fullOr, isAbsent } from "./fs-errors.js";
import { withKeyLock } from "./fs-key-lock.js";
import { listKeys } from "./fs-list.js";
import { exists, replace, stage, stageFrom, stagingPlace, unlinkQuietly } from "./fs-staging.js";
import { fileStamp, laterThan, linkUnlessPresent, renameOver, statNow } from "./fs-stamps.js";
import type { PinnedObject, ReadCost, Store } from "./store.js";

const ABSENT = Symbol("absent");
/** One read of a file, as FileRangeReader without the path: [bytes read, size]. */
type ReadJob = (
  position: number,
  length: number,
  fromEnd: boolean,
  into: Uint8Array,
) => Promise<[number, number]>;
/** Reads up to this long allocate their result before the object's size is known (one job, not two). */
const FRESH_READ_MAX = 1 << 20;
/** get() reads this much in its first job; most objects read whole (zarr.json, tokens, manifests). */
const GET_GUESS_BYTES = 16 << 10;

/**
 * A Store on a local directory. Writes stage into a temp file in the target's own directory (so the
 * rename never crosses a filesystem), fsync it, then rename (put) or hard-link (putIfAbsent) it into place:
 * a reader, or a process that survives our crash, sees the old object or the new one, never a part.
 *
 * Keys are confined lexically (no "..", ".", empty or absolute segments) and on the file system: no
 * symbolic link below the root is followed by any read, write, delete or list. Reads open the object
 * with an openat walk (fileio's `beneath`), writes and deletes work in a directory opened that way
 * (ConfinedDir), and a link met on a key's path is a SymlinkRefused (list refuses a prefix through one
 * and skips one below the prefix). Why refuse rather than follow links that stay inside:
 * packages/spec/docs/store-capabilities.md, "FsStore and symbolic links".
 */
export class FsStore implements Store {
  readonly url: string;
  readonly readCost: ReadCost = "cheap";
  readonly directReads = true;
  /** Absolute path of the store root; created by the first write. */
  readonly root: string;
  readonly #direct = DirectWrites.fromEnvironment();
  /** One job per read (open, fstat, pread, close, on the addon's I/O threads) instead of four node:fs calls. */
  readonly #reader: FileRangeReader | undefined = nativeFilesEnabled() ? fileRangeReader() : undefined;
  /** Reads into the caller's buffer: the native job, else node:fs's open, fstat, read and close. */
  readonly #intoReader: FileRangeReader = this.#reader ?? fileRangeReader(false);
  readonly #pinned: (path: string, beneath?: number) => PinnedFile = pinnedFileReader(nativeFilesEnabled());
  /** version and size off the JS thread (one job), else a confined walk on it. */
  readonly #statter: FileStatter | undefined = nativeFilesEnabled() ? fileStatter() : undefined;
  /** Key prefixes whose staging and lock files go to a directory of their own (see stageApart). */
  readonly #apart: string[] = [];

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
    check.key(key);
    if (this.#reader !== undefined) {
      // Metadata documents are small: one job reads them whole, a larger object a second time.
      const got = await this.#readFresh(key, 0, GET_GUESS_BYTES, false);
      if (got === ABSENT) return undefined;
      if (got.size <= GET_GUESS_BYTES) return got.bytes;
    }
    return this.#read(key, (file, size) => readFully(file, 0, size));
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | undefined> {
    check.range(key, offset, length);
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
    check.suffix(key, n);
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
    check.suffix(key, n);
    return readIntoBy(this.#intoJob(key), "getSuffixInto", key, 0, n, true, into);
  }

  async getRangeInto(
    key: string,
    offset: number,
    length: number,
    into: Uint8Array,
  ): Promise<number | undefined> {
    check.range(key, offset, length);
    return readIntoBy(this.#intoJob(key), "getRangeInto", key, offset, length, false, into);
  }

  /**
   * Reads of one version: every read goes through the descriptor the first read opened, one job each
   * (native) as an unpinned read is, so a shard's index and bodies cost one open instead of one per read.
   */
  pin(key: string): PinnedObject {
    check.key(key);
    const file = this.#pinned(this.#path(key), this.root.length);
    const job: ReadJob = (position, length, fromEnd, into) => file.read(position, length, fromEnd, into);
    const fresh = async (position: number, length: number, fromEnd: boolean) => {
      const got = await readFreshBy(job, key, position, length, fromEnd);
      return got === ABSENT ? undefined : got.bytes;
    };
    return {
      key,
      getRange: (offset, length) => {
        check.range(key, offset, length);
        return fresh(offset, length, false);
      },
      getSuffix: (n) => {
        check.suffix(key, n);
        return fresh(0, n, true);
      },
      getRangeInto: (offset, length, into) => {
        check.range(key, offset, length);
        return readIntoBy(job, "getRangeInto", key, offset, length, false, into);
      },
      getSuffixInto: (n, into) => {
        check.suffix(key, n);
        return readIntoBy(job, "getSuffixInto", key, 0, n, true, into);
      },
      close: () => file.close(),
    };
  }

  async size(key: string): Promise<number | undefined> {
    check.key(key);
    const info = await this.#stat(key, "size");
    return info === undefined ? undefined : Number(info.size);
  }

  /**
   * From now on, the staging and lock files of keys under `prefix` (a directory: it ends in "/") go to
   * `<prefix>.zs-tmp-staging/` instead of the key's own directory, so a program that lists one of those
   * directories and reads every name in it never meets one a killed process left behind. Every process
   * writing such keys with putIfVersion must set the same prefix apart: the lock file moves with it.
   */
  stageApart(prefix: string): void {
    check.prefix(prefix);
    if (!prefix.endsWith("/"))
      throw new StoreError(`stageApart: ${JSON.stringify(prefix)} must end in "/"`, prefix);
    if (!this.#apart.includes(prefix)) this.#apart.push(prefix);
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    check.write(key, bytes);
    await this.#writing("put", key, () =>
      inDir(this.root, key, true, "put", async (dir, name) => {
        dir.refuseLink(name, key, "put");
        const { place } = stagingPlace(this.root, key, dir, name, this.#apart);
        await replace(place, dir.at(name), bytes, key, this.#direct);
        await dir.sync();
      }),
    );
  }

  /**
   * The object and its version, read through one open file: a rename that replaces the object meanwhile
   * does not mix the two.
   */
  async getVersioned(key: string): Promise<{ bytes: Uint8Array; version: string } | undefined> {
    check.key(key);
    return this.#read(key, async (file, size, info) => ({
      bytes: await readFully(file, 0, size),
      version: fileStamp(info),
    }));
  }

  async version(key: string): Promise<string | undefined> {
    check.key(key);
    const info = await this.#stat(key, "version");
    return info === undefined ? undefined : fileStamp(info);
  }

  /**
   * Compare-and-swap on the file's stamp (inode, size, modification time), exclusive across processes
   * through a lock file beside the object (see withKeyLock for its limits). The bytes are staged and
   * synced before the lock is taken, so the lock is held for a stat and a rename only. Every writer of the
   * key must use putIfVersion, not put. A crash while holding the lock leaves the object old or new, never
   * a part, plus a lock file that the next writer breaks once it is stale.
   */
  async putIfVersion(key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined> {
    check.conditionalWrite(key, bytes, expected);
    return this.#writing("putIfVersion", key, () => this.#putIfVersion(key, bytes, expected));
  }

  #putIfVersion(key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined> {
    return inDir(this.root, key, true, "putIfVersion", async (dir, name) => {
      dir.refuseLink(name, key, "putIfVersion");
      const target = dir.at(name);
      const { place, lockName } = stagingPlace(this.root, key, dir, name, this.#apart);
      const temp = await stage(place, bytes, key, this.#direct);
      let swapped = false;
      try {
        // rename and link keep the inode, size and mtime: the staged file's stamp is the new version.
        let staged = statSync(temp, { bigint: true });
        swapped =
          expected === null
            ? linkUnlessPresent(temp, target, key)
            : await withKeyLock(place.path, lockName, key, () => {
                const current = statNow(dir, name, key, "putIfVersion");
                if ((current === undefined ? null : fileStamp(current)) !== expected) return false;
                if (current !== undefined) staged = laterThan(temp, staged, current.mtimeNs);
                renameOver(temp, target, current);
                return true;
              });
        if (!swapped) return undefined;
        await dir.sync();
        return fileStamp(staged);
      } catch (err) {
        throw fsError("putIfVersion", key, err);
      } finally {
        if (!swapped) await unlinkQuietly(temp);
      }
    });
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    check.write(key, bytes);
    return this.#writing("putIfAbsent", key, () => this.#putIfAbsent(key, bytes));
  }

  async #putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    const created = await inDir(this.root, key, true, "putIfAbsent", async (dir, name) => {
      dir.refuseLink(name, key, "putIfAbsent");
      const target = dir.at(name);
      // Cheap early answer for the common "already claimed" case; the link below is what decides.
      if (await exists(target, key)) return false;
      const { place } = stagingPlace(this.root, key, dir, name, this.#apart);
      const temp = await stage(place, bytes, key, this.#direct);
      let made = true;
      try {
        await link(temp, target);
      } catch (err) {
        if (errorCode(err) !== "EEXIST") throw fsError("putIfAbsent", key, err);
        made = false;
      } finally {
        await unlinkQuietly(temp);
      }
      if (made) await dir.sync();
      return made;
    });
    return created === true;
  }

  /**
   * Stages the stream into a temp file where put stages (beside the target, or apart under a stageApart
   * prefix; each chunk written before the next is pulled),
   * fsyncs it, then renames it over the key or, with ifAbsent, hard-links it (EEXIST: false).
   */
  async putStream(
    key: string,
    chunks: AsyncIterable<Uint8Array>,
    options: { ifAbsent?: boolean } = {},
  ): Promise<boolean> {
    check.stream(key, chunks);
    const ifAbsent = options.ifAbsent === true;
    const placed = await this.#writing("putStream", key, () =>
      inDir(this.root, key, true, "putStream", async (dir, name) => {
        dir.refuseLink(name, key, "putStream");
        const target = dir.at(name);
        if (ifAbsent && (await exists(target, key))) return false;
        const { place } = stagingPlace(this.root, key, dir, name, this.#apart);
        const temp = await stageFrom(place, chunks, key);
        try {
          if (ifAbsent) await link(temp, target);
          else await rename(temp, target);
        } catch (err) {
          if (ifAbsent && errorCode(err) === "EEXIST") return false;
          throw fsError("putStream", key, err);
        } finally {
          await unlinkQuietly(temp);
        }
        await dir.sync();
        return true;
      }),
    );
    return placed === true;
  }

  async delete(key: string): Promise<void> {
    check.key(key);
    // A copy-on-write file system (btrfs) can need space to unlink, and refuse with ENOSPC.
    await this.#writing("delete", key, () =>
      inDir(this.root, key, false, "delete", async (dir, name) => {
        dir.refuseLink(name, key, "delete");
        const path = dir.at(name);
        try {
          await unlink(path);
        } catch (err) {
          if (isAbsent(err) || errorCode(err) === "EISDIR") return;
          // macOS reports unlink(directory) as EPERM; a directory is not an object, so it is absent.
          if (errorCode(err) === "EPERM" && isDirectory(path)) return;
          throw fsError("delete", key, err);
        }
      }),
    );
  }

  async list(prefix: string): Promise<string[]> {
    check.prefix(prefix);
    return listKeys(this.root, prefix);
  }

  /**
   * Resolves at once: every file a call opens is closed by that call (a pin's by the pin), and the I/O
   * threads belong to the process, so an FsStore holds nothing between calls. It closes like the other
   * stores so that code given any store from openStore can close it.
   */
  async close(): Promise<void> {}

  /** The key's regular file's stamp fields; undefined when absent or not a regular file. */
  async #stat(
    key: string,
    action: string,
  ): Promise<Pick<BigIntStats, "ino" | "size" | "mtimeNs"> | undefined> {
    if (this.#statter === undefined)
      return inDir(this.root, key, false, action, (dir, name) => statNow(dir, name, key, action));
    let info: Awaited<ReturnType<FileStatter>>;
    try {
      info = await this.#statter(this.#path(key), this.root.length);
    } catch (err) {
      if (isAbsent(err)) return undefined;
      throw confinedError(action, key, err);
    }
    if (info.kind === "link") throw refused(action, key);
    return info.kind === "file"
      ? { ino: info.ino, size: BigInt(info.size), mtimeNs: info.mtimeNs }
      : undefined;
  }

  #path(key: string): string {
    return `${this.root}/${key}`;
  }

  /**
   * A write of `key`, its failures for lack of space or quota named StoreFull. Every write path removes
   * what it staged (the staging file, a lock file) before its error reaches here, so the call changed
   * nothing: the staged bytes become the object by one rename or link, which happens last or not at all.
   */
  async #writing<T>(action: string, key: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      throw fullOr(action, key, this.#path(key), err);
    }
  }

  /** A native read into a fresh buffer of `length` bytes (see readFreshBy). */
  #readFresh(key: string, position: number, length: number, fromEnd: boolean) {
    return readFreshBy(this.#job(this.#reader!, key), key, position, length, fromEnd);
  }

  /** A read of the key's path into the caller's buffer. */
  #intoJob(key: string): ReadJob {
    return this.#job(this.#intoReader, key);
  }

  /** `reader` bound to the key's path, confined below the root. */
  #job(reader: FileRangeReader, key: string): ReadJob {
    const path = this.#path(key);
    const beneath = this.root.length;
    return (position, length, fromEnd, into) => reader(path, position, length, fromEnd, into, beneath);
  }

  /** Opens the key for reading; a missing path or a directory at the key reads as absent. */
  async #read<T>(
    key: string,
    use: (file: FileHandle, size: number, info: BigIntStats) => Promise<T>,
  ): Promise<T | undefined> {
    let file: FileHandle;
    try {
      file = await openBeneath(this.#path(key), this.root.length, READ_FLAGS);
    } catch (err) {
      if (isAbsent(err) || errorCode(err) === "EISDIR") return undefined;
      throw confinedError("read", key, err);
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
}

/** O_NONBLOCK: a FIFO at a key opens at once (and reads as absent) instead of waiting for a writer. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** ELOOP from a confined open is a link below the root: SymlinkRefused; else fsError. */
function confinedError(action: string, key: string, err: unknown): StoreError {
  return errorCode(err) === "ELOOP" ? refused(action, key, err) : fsError(action, key, err);
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** One read job; a missing path or anything but a regular file at the key reads as absent. */
async function runJob(
  job: ReadJob,
  key: string,
  position: number,
  length: number,
  fromEnd: boolean,
  into: Uint8Array,
): Promise<{ read: number; size: number } | typeof ABSENT> {
  let read: number;
  let size: number;
  try {
    [read, size] = await job(position, length, fromEnd, into);
  } catch (err) {
    if (isAbsent(err) || errorCode(err) === "EISDIR") return ABSENT;
    throw confinedError("read", key, err);
  }
  return size < 0 ? ABSENT : { read, size };
}

/** A read into a fresh buffer of `length` bytes (not zero-filled: the read overwrites it). */
async function readFreshBy(
  job: ReadJob,
  key: string,
  position: number,
  length: number,
  fromEnd: boolean,
): Promise<{ bytes: Uint8Array; size: number } | typeof ABSENT> {
  const buffer = new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
  const got = await runJob(job, key, position, length, fromEnd, buffer);
  if (got === ABSENT) return ABSENT;
  // A short read hands out a copy, so the buffer's unread tail is never reachable.
  return { bytes: got.read < length ? buffer.slice(0, got.read) : buffer, size: got.size };
}

/** A range (or, fromEnd, the last `length` bytes) read into the caller's buffer; how many bytes it wrote. */
async function readIntoBy(
  job: ReadJob,
  what: string,
  key: string,
  offset: number,
  length: number,
  fromEnd: boolean,
  into: Uint8Array,
): Promise<number | undefined> {
  if (!(into instanceof Uint8Array)) throw new SchemaError(`${what}: into must be a Uint8Array`, "/into");
  const got = await runJob(job, key, fromEnd ? 0 : offset, length, fromEnd, into);
  if (got === ABSENT) return undefined;
  if (got.read < 0) {
    const need = fromEnd ? Math.min(length, got.size) : Math.min(length, got.size - offset);
    throw new SchemaError(`${what}: ${key} needs ${need} bytes, into holds ${into.length}`, "/into");
  }
  return got.read;
}

/** Reads `length` bytes at `position` into a new buffer (shorter at the file's end). */
async function readFully(file: FileHandle, position: number, length: number): Promise<Uint8Array> {
  // Not zero-filled first: the read overwrites every byte we hand out, and clearing megabytes per shard
  // read is a tenth of a reader's JS time. A short read returns a copy, so the uninitialised tail is never
  // reachable through the result's buffer.
  const out = new Uint8Array(Buffer.allocUnsafeSlow(length).buffer, 0, length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await file.read(out, done, length - done, position + done);
    if (bytesRead === 0) return out.slice(0, done);
    done += bytesRead;
  }
  return out;
}

import { loadAddon } from "./native-backend.js";

// Local-file I/O lives here because this is the package's one native module. It serves FsStore, where
// node:fs costs several libuv round trips per object and copies every written byte into the page cache.

/**
 * Creates the file `path` (it must not exist), writes `bytes` to it and fsyncs it, bypassing the page cache
 * (O_DIRECT) for every whole 4 KiB block. Rejects like node:fs does: `code` is the errno's name and
 * `syscall` the call that failed. EINVAL (or ENOTSUP) means this filesystem refuses direct I/O; the file may
 * then exist, partly written, and the caller removes it. Leave `bytes` untouched until the promise settles.
 */
export type DirectFileWriter = (path: string, bytes: Uint8Array) => Promise<void>;

/**
 * Reads `length` bytes from `position` of the file `path` (or, with `fromEnd`, its last `length` bytes),
 * clamped to the file, into the start of `into`, in one pool job (open, fstat, pread, close). Resolves with
 * [bytes read, file size]; the size is -1 when `path` is not a regular file, and bytes read is -1 when
 * `into` is too small for what the request covers (nothing is read then). Rejects like DirectFileWriter.
 */
export type FileRangeReader = (
  path: string,
  position: number,
  length: number,
  fromEnd: boolean,
  into: Uint8Array,
) => Promise<[number, number]>;

/** The native addon's direct file writer, or undefined where the addon is not built (or not on Linux). */
export function directFileWriter(): DirectFileWriter | undefined {
  const r = loadAddon();
  if (!("addon" in r) || process.platform !== "linux") return undefined;
  const addon = r.addon;
  return (path, bytes) => addon.writeFileDirect(path, bytes);
}

/** The native addon's one-job range reader, or undefined where the addon is not built. */
export function fileRangeReader(): FileRangeReader | undefined {
  const r = loadAddon();
  if (!("addon" in r)) return undefined;
  const addon = r.addon;
  return (path, position, length, fromEnd, into) =>
    addon.readFileInto(path, position, length, fromEnd ? 1 : 0, into);
}

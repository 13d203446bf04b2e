import { loadAddon } from "./native-backend.js";

/**
 * Creates the file `path` (it must not exist), writes `bytes` to it and fsyncs it, bypassing the page cache
 * (O_DIRECT) for every whole 4 KiB block. Rejects like node:fs does: `code` is the errno's name and
 * `syscall` the call that failed. EINVAL (or ENOTSUP) means this filesystem refuses direct I/O; the file may
 * then exist, partly written, and the caller removes it. Leave `bytes` untouched until the promise settles.
 */
export type DirectFileWriter = (path: string, bytes: Uint8Array) => Promise<void>;

/**
 * The native addon's direct file writer, or undefined where the addon is not built. It lives here because
 * this is the package's one native module; it serves FsStore, which writes every shard once and fsyncs it
 * at once, so copying those bytes into the page cache is pure cost (issue #10).
 */
export function directFileWriter(): DirectFileWriter | undefined {
  const r = loadAddon();
  if (!("addon" in r) || process.platform !== "linux") return undefined;
  const addon = r.addon;
  return (path, bytes) => addon.writeFileDirect(path, bytes);
}

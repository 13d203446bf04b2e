/**
 * `beneath` (0 when absent) is the length of the path's trusted prefix, a store root: no component after
 * it is followed when it is a symbolic link, whatever another process renames meanwhile, and a link
 * there rejects with code ELOOP. Reads open with O_NONBLOCK, so a FIFO answers at once (not a regular
 * file) instead of waiting for a writer.
 *
 * Creates the file `path` (it must not exist), writes `bytes` to it and fsyncs it. Rejects like node:fs
 * does: `code` is the errno's name and `syscall` the call that failed. EINVAL (or ENOTSUP) means this
 * filesystem refuses direct I/O; the file may then exist, partly written, and the caller removes it.
 * Leave `bytes` untouched until the promise settles.
 */
export type DirectFileWriter = (path: string, bytes: Uint8Array, beneath?: number) => Promise<void>;

/**
 * Reads `length` bytes from `position` of the file `path` (or, with `fromEnd`, its last `length` bytes),
 * clamped to the file, into the start of `into`. Resolves with [bytes read, file size]; the size is -1
 * when `path` is not a regular file, and bytes read is -1 when `into` is too small for what the request
 * covers (nothing is read then). Rejects like DirectFileWriter.
 */
export type FileRangeReader = (
  path: string,
  position: number,
  length: number,
  fromEnd: boolean,
  into: Uint8Array,
  beneath?: number,
) => Promise<[number, number]>;

/**
 * Reads of one file through one descriptor. The first read opens the path and keeps the file open; later
 * reads read that same file, whatever is renamed over the path meanwhile (the open inode stays intact),
 * so an object replaced by stage-and-rename is read from one version only. Each read answers as a
 * FileRangeReader does; a first read that fails or finds no regular file leaves nothing open, and the next
 * read opens the path again. Later reads may run at once once the first has settled. `close` waits for
 * the open and releases the descriptor; no read may follow it.
 */
export interface PinnedFile {
  read(position: number, length: number, fromEnd: boolean, into: Uint8Array): Promise<[number, number]>;
  close(): Promise<void>;
}

/**
 * The lstat of `path` (its last component is not followed), confined by `beneath` as reads are: resolves
 * with what lies there ("file", "link" or "other"), its inode number, size and modification time in
 * nanoseconds. Rejects like DirectFileWriter: ENOENT or ENOTDIR when nothing is there, ELOOP for a link
 * on the way.
 */
export type FileStatter = (
  path: string,
  beneath?: number,
) => Promise<{ kind: "file" | "link" | "other"; ino: bigint; size: number; mtimeNs: bigint }>;

import { closeSync } from "node:fs";
import type { DirectFileWriter, FileRangeReader, FileStatter, PinnedFile } from "./file-io.js";
import { type FileIoAddon, loadFileIoAddon } from "./native-addon.js";
import { nodeFsPinnedFile, nodeFsRangeReader, nodeFsWriter } from "./node-fs.js";

export type { DirectFileWriter, FileRangeReader, FileStatter, PinnedFile } from "./file-io.js";
export { FD_PATHS, openBeneath } from "./node-fs.js";

/**
 * How file jobs run: "native" is the addon (its own I/O threads, O_DIRECT writes on Linux); "node:fs" is
 * the fallback where the addon is not built.
 */
export type FileIoBackend = "native" | "node:fs";

/** Which implementation directFileWriter and fileRangeReader return, and why when it is node:fs. */
export function fileIoBackend(): { backend: FileIoBackend; reason?: string } {
  const r = loadFileIoAddon();
  return "addon" in r ? { backend: "native" } : { backend: "node:fs", reason: r.error };
}

/**
 * A writer that bypasses the page cache (O_DIRECT) for every whole 4 KiB block: the addon's on Linux;
 * elsewhere, or where the addon is not built, node:fs's buffered write with the same contract.
 */
export function directFileWriter(): DirectFileWriter {
  const r = loadFileIoAddon();
  if (!("addon" in r) || process.platform !== "linux") return nodeFsWriter;
  const addon = r.addon;
  return (path, bytes, beneath = 0) => addon.writeFileDirect(path, beneath, bytes);
}

/**
 * A range reader that is one job (open, fstat, pread, close) on the addon's I/O threads, else (or with
 * `native` false) node:fs.
 */
export function fileRangeReader(native = true): FileRangeReader {
  const r = loadFileIoAddon();
  if (!native || !("addon" in r)) return nodeFsRangeReader;
  const addon = r.addon;
  return (path, position, length, fromEnd, into, beneath = 0) =>
    addon.readFileInto(path, beneath, position, length, fromEnd ? 1 : 0, into);
}

/**
 * A confined lstat that is one job on the addon's I/O threads, or undefined where the addon is not built
 * (the caller then walks the directories itself). A stat off the JS thread matters on a cold cache: each
 * directory of the walk may wait on the disk, and a reader revalidates a dozen metadata documents at once.
 */
export function fileStatter(): FileStatter | undefined {
  const r = loadFileIoAddon();
  if (!("addon" in r)) return undefined;
  const addon = r.addon;
  return (path, beneath = 0) =>
    addon.statBeneath(path, beneath).then(([kind, ino, size, mtimeNs]) => ({ kind, ino, size, mtimeNs }));
}

/**
 * Opens PinnedFiles: each read one job on the addon's I/O threads (the first opens the file and keeps
 * it, as many jobs as unpinned reads), else (or with `native` false) node:fs.
 */
export function pinnedFileReader(native = true): (path: string, beneath?: number) => PinnedFile {
  const r = loadFileIoAddon();
  if (!native || !("addon" in r)) return nodeFsPinnedFile;
  const addon = r.addon;
  return (path, beneath = 0) => nativePinnedFile(addon, path, beneath);
}

function nativePinnedFile(addon: FileIoAddon, path: string, beneath: number): PinnedFile {
  /** The descriptor the first read opened, -1 when it left none open. */
  let opened: Promise<number> | undefined;
  return {
    async read(position, length, fromEnd, into) {
      const fd = opened === undefined ? -1 : await opened;
      const first = addon.readPinnedInto(
        fd >= 0 ? fd : path,
        beneath,
        position,
        length,
        fromEnd ? 1 : 0,
        into,
      );
      if (fd < 0)
        opened = first.then(
          ([, , kept]) => kept,
          () => -1,
        );
      const [read, size] = await first;
      return [read, size];
    },
    async close() {
      const fd = opened === undefined ? -1 : await opened;
      opened = undefined;
      // Closing a read-only regular file does no I/O: no job is worth queueing for it.
      if (fd >= 0) closeSync(fd);
    },
  };
}

import type { DirectFileWriter, FileRangeReader } from "./file-io.js";
import { loadFileIoAddon } from "./native-addon.js";
import { nodeFsRangeReader, nodeFsWriter } from "./node-fs.js";

export type { DirectFileWriter, FileRangeReader } from "./file-io.js";

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
  return (path, bytes) => addon.writeFileDirect(path, bytes);
}

/** A range reader that is one job (open, fstat, pread, close) on the addon's I/O threads, else node:fs. */
export function fileRangeReader(): FileRangeReader {
  const r = loadFileIoAddon();
  if (!("addon" in r)) return nodeFsRangeReader;
  const addon = r.addon;
  return (path, position, length, fromEnd, into) =>
    addon.readFileInto(path, position, length, fromEnd ? 1 : 0, into);
}

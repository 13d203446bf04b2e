import { type FileHandle, open } from "node:fs/promises";
import type { DirectFileWriter, FileRangeReader, PinnedFile } from "./file-io.js";

/** The same contract as the addon's writer through node:fs: exclusive create, write, fsync (buffered). */
export const nodeFsWriter: DirectFileWriter = async (path, bytes) => {
  const file = await open(path, "wx");
  try {
    await file.writeFile(bytes);
    await file.sync();
  } finally {
    await file.close();
  }
};

/** The same contract as the addon's range reader through node:fs (open, fstat, read, close). */
export const nodeFsRangeReader: FileRangeReader = async (path, position, length, fromEnd, into) => {
  const file = await open(path, "r");
  try {
    return await readHandle(file, position, length, fromEnd, into);
  } finally {
    await file.close();
  }
};

/** A PinnedFile through a node:fs FileHandle: open once, then fstat and read per read. */
export function nodeFsPinnedFile(path: string): PinnedFile {
  let opened: Promise<FileHandle | undefined> | undefined;
  return {
    async read(position, length, fromEnd, into) {
      const kept = opened === undefined ? undefined : await opened;
      if (kept !== undefined) return readHandle(kept, position, length, fromEnd, into);
      const first = open(path, "r");
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
